"""How ctl reaches a host over SSH: the chain of hops (bastions, then the host), each hop's user,
port and keys, from the inventory's `ssh` settings and, when the inventory opts in, the user's
OpenSSH client configuration. Pure except `load_openssh_config`, which reads the file.

What is taken from an OpenSSH config file (only with `ssh.config_file` set, per inventory or
host): `HostName`, `User`, `Port`, `IdentityFile` and `ProxyJump` of the matching `Host` /
`Match` blocks (asyncssh's parser, the one asyncssh itself uses). Everything else in the file is
ignored on purpose: host keys are always checked against the inventory's `known_hosts` (never
`StrictHostKeyChecking`/`UserKnownHostsFile` from the file), agent forwarding is never enabled
(whatever `ForwardAgent` says), and `ProxyCommand` is refused (a shell command line). A value
the inventory sets explicitly wins over the file, as a command-line option wins over
ssh_config for `ssh`.

    hops = connection_plan(ssh, "192.168.50.31", load_openssh_config(ssh.config_file))
    [Hop(host='bastion.lab', port=22, user='ctl', ...), Hop(host='192.168.50.31', port=22, ...)]
"""
from __future__ import annotations

import getpass
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from controller.argutil import NAME_PATTERNS
from controller.errors import ParameterError

# A bastion as OpenSSH's ProxyJump writes it: [user@]host[:port], several separated by commas.
_HOP = re.compile(r"(?:(?P<user>" + NAME_PATTERNS["user"] + r")@)?"
                  r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*))"
                  r"(?::(?P<port>[0-9]{1,5}))?")
MAX_HOPS = 4


@dataclass(frozen=True)
class JumpSpec:
    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return (f"{self.user}@" if self.user else "") + host + (f":{self.port}" if self.port else "")


def parse_proxy_jump(text: str, what: str = "proxy_jump") -> list[JumpSpec]:
    """OpenSSH ProxyJump syntax, `[user@]host[:port][,...]`; "none" is no bastion."""
    text = text.strip()
    if text.lower() == "none":
        return []
    hops = []
    for part in text.split(","):
        m = _HOP.fullmatch(part.strip())
        if not m:
            shown = part.strip()[:60]
            raise ParameterError(f"{what}: {shown!r} is not [user@]host[:port] (ssh:// URLs and "
                                 "ProxyCommand are not supported)")
        port = int(m.group("port")) if m.group("port") else None
        if port is not None and not 1 <= port <= 65535:
            raise ParameterError(f"{what}: port {port} is outside 1..65535")
        hops.append(JumpSpec(m.group("v6") or m.group("host"), m.group("user"), port))
    if len(hops) > MAX_HOPS:
        raise ParameterError(f"{what}: {len(hops)} bastions in a chain; at most {MAX_HOPS}")
    return hops


class SSHSettings(Protocol):
    """What connection_plan needs from controller.inventory.SSH."""

    user: str
    port: int
    key_file: Path | None
    agent: bool
    proxy_jump: str | None
    explicit: frozenset[str]


# host, user (None = not given), port (None) -> the options of the matching blocks (asyncssh names)
ConfigLookup = Callable[[str, "str | None", "int | None"], dict[str, Any]]


@dataclass(frozen=True)
class Hop:
    host: str
    port: int
    user: str
    key_files: tuple[Path, ...]     # tried in order, after the agent's keys (when the agent is on)
    via_config: tuple[str, ...] = ()  # the options the OpenSSH config supplied, for messages and records

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}:{self.port}"


def _paths(files: Any) -> tuple[Path, ...]:
    """Key files as given (a path, or IdentityFile's list of them), `~` expanded."""
    if isinstance(files, (str, Path)):
        files = (files,)
    return tuple(Path(str(f)).expanduser() for f in files)


def _hop(ssh: SSHSettings, host: str, user: str | None, port: int | None,
         lookup: ConfigLookup | None) -> tuple[Hop, dict[str, Any]]:
    """One hop: the values given (the inventory's explicit ones for the target, the ProxyJump spec's
    for a bastion) win over the config file, which wins over the inventory's defaults."""
    options = lookup(host, user, port) if lookup else {}
    if "ProxyCommand" in options:
        raise ParameterError(f"ssh config: ProxyCommand for {host} is not supported (a shell command line); "
                             "use ProxyJump, or `proxy_jump` in the inventory")
    used: list[str] = []

    def pick(given: Any, option: str, default: Any) -> Any:
        if given:
            return given
        if options.get(option):
            used.append(option)
            return options[option]
        return default
    real_host = str(options.get("Hostname") or host)
    if real_host != host:
        used.append("HostName")
    final_user = str(pick(user, "User", ssh.user))
    final_port = int(pick(port, "Port", ssh.port))
    if ssh.key_file is not None and "key_file" in ssh.explicit:
        keys: tuple[Path, ...] = (ssh.key_file,)
    else:
        keys = _paths(pick((), "IdentityFile", ())) or ((ssh.key_file,) if ssh.key_file else ())
    if not re.fullmatch(NAME_PATTERNS["user"], final_user):
        raise ParameterError(f"ssh config: user {final_user[:40]!r} for {host} is not a valid login name")
    return Hop(real_host, final_port, final_user, keys, tuple(used)), options


def connection_plan(ssh: SSHSettings, address: str, lookup: ConfigLookup | None = None) -> list[Hop]:
    """The hops to `address`: every bastion in order, the host last (pure, given `lookup`)."""
    target, options = _hop(ssh, address, ssh.user if "user" in ssh.explicit else None,
                           ssh.port if "port" in ssh.explicit else None, lookup)
    jump_text = ssh.proxy_jump if ssh.proxy_jump is not None else options.get("ProxyJump")
    if ssh.proxy_jump is None and jump_text:
        target = Hop(target.host, target.port, target.user, target.key_files, target.via_config + ("ProxyJump",))
    jumps = parse_proxy_jump(str(jump_text), f"proxy_jump of {address}") if jump_text else []
    hops = [_hop(ssh, j.host, j.user, j.port, lookup)[0] for j in jumps]
    for h in hops + [target]:
        if not h.key_files and not ssh.agent:
            raise ParameterError(f"ssh to {h}: no key (set `key_file`, an IdentityFile in the ssh config, "
                                 "or `agent: true`)")
    return hops + [target]


def load_openssh_config(path: Path | None) -> ConfigLookup | None:
    """A lookup over the OpenSSH client config at `path` (None: no config is read)."""
    if path is None:
        return None
    if not path.is_file():
        raise ParameterError(f"ssh config_file {path} does not exist")
    from asyncssh.config import SSHClientConfig   # the parser asyncssh uses for `config=`
    local_user = getpass.getuser()

    def lookup(host: str, user: str | None, port: int | None) -> dict[str, Any]:
        try:
            cfg = SSHClientConfig.load(None, [path], False, False, False, local_user,
                                       user if user is not None else (), host, port if port is not None else ())
        except (OSError, ValueError) as exc:
            raise ParameterError(f"ssh config_file {path}: {exc}") from None
        return {k: cfg.get(k) for k in ("Hostname", "User", "Port", "IdentityFile", "ProxyJump", "ProxyCommand")
                if cfg.get(k) not in (None, (), [])}
    return lookup
