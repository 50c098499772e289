"""How ctl reaches a host over SSH: the chain of hops (bastions, then the host), each hop's user,
port and keys, from the inventory's `ssh` settings and, when the inventory opts in, the user's
OpenSSH client configuration. Pure except `load_openssh_config`, which reads the file.

What is taken from an OpenSSH config file (only with `ssh.config_file` set, per inventory or
host): `HostName`, `User`, `Port`, `IdentityFile` and `ProxyJump` of the matching `Host` /
`Match` blocks, read by ctl's own parser (controller.openssh_config), which executes nothing:
`Match exec`, ProxyCommand, LocalCommand, `PermitLocalCommand yes` and KnownHostsCommand are
refused wherever they appear, `${VAR}` is expanded only for HOME, USER and LOGNAME. Everything
else in the file is ignored on purpose: host keys are always checked against the inventory's
`known_hosts` (never `StrictHostKeyChecking`/`UserKnownHostsFile` from the file), agent
forwarding is never enabled (whatever `ForwardAgent` says), no forwarding or remote command of
the file is ever set up (LocalForward, RemoteCommand, ...). A value the inventory sets explicitly
wins over the file, as a command-line option wins over ssh_config for `ssh`.

    hops = connection_plan(ssh, "192.168.50.31", load_openssh_config(ssh.config_file))
    [Hop(host='bastion.lab', port=22, user='ctl', ...), Hop(host='192.168.50.31', port=22, ...)]
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Protocol

from controller import openssh_config
from controller.argutil import NAME_PATTERNS
from controller.errors import ParameterError
from controller.openssh_config import MAX_HOPS, JumpSpec, Resolved, parse_proxy_jump
from controller.textsafe import shown

__all__ = ["MAX_HOPS", "ConfigLookup", "Hop", "JumpSpec", "SSHSettings", "connection_plan", "load_openssh_config",
           "parse_proxy_jump"]


class SSHSettings(Protocol):
    """What connection_plan needs from controller.inventory.SSH."""

    user: str
    port: int
    key_file: Path | None
    agent: bool
    proxy_jump: str | None
    explicit: frozenset[str]


# OpenSSHConfig.resolve: (host, user, port, jump given or None, *, default_user, default_port) -> Resolved
ConfigLookup = Callable[..., Resolved]


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


def _hop(ssh: SSHSettings, host: str, user: str | None, port: int | None, jump: str | None,
         lookup: ConfigLookup | None) -> tuple[Hop, Resolved | None]:
    """One hop: the values given (the inventory's explicit ones for the target, the ProxyJump spec's
    for a bastion) win over the config file, which wins over the inventory's defaults."""
    if lookup is None:
        r = None
        real_host, final_user, final_port, from_file, used = host, user or ssh.user, port or ssh.port, (), ()
    else:
        r = lookup(host, user, port, jump, default_user=ssh.user, default_port=ssh.port)
        real_host, final_user, final_port, from_file, used = r.host, r.user, r.port, r.identity_files, r.supplied
    if ssh.key_file is not None and "key_file" in ssh.explicit:
        keys: tuple[Path, ...] = (ssh.key_file,)
    else:
        keys = from_file or ((ssh.key_file,) if ssh.key_file else ())
    if keys != from_file:
        used = tuple(u for u in used if u != "IdentityFile")
    if not re.fullmatch(NAME_PATTERNS["user"], final_user):
        raise ParameterError(f"ssh config: user {shown(final_user, 40)!r} for {host} is not a valid login name")
    return Hop(real_host, final_port, final_user, keys, tuple(used)), r


def connection_plan(ssh: SSHSettings, address: str, lookup: ConfigLookup | None = None) -> list[Hop]:
    """The hops to `address`: every bastion in order, the host last (pure, given `lookup`)."""
    target, r = _hop(ssh, address, ssh.user if "user" in ssh.explicit else None,
                     ssh.port if "port" in ssh.explicit else None, ssh.proxy_jump, lookup)
    jump_text = ssh.proxy_jump if ssh.proxy_jump is not None else (r.jump if r else None)
    jumps = parse_proxy_jump(str(jump_text), f"proxy_jump of {address}") if jump_text else []
    # a bastion's own ProxyJump in the file is not followed (ctl chains only the target's)
    hops = [_hop(ssh, j.host, j.user, j.port, None, lookup)[0] for j in jumps]
    hops = [Hop(h.host, h.port, h.user, h.key_files, tuple(u for u in h.via_config if u != "ProxyJump"))
            for h in hops]
    for h in hops + [target]:
        if not h.key_files and not ssh.agent:
            raise ParameterError(f"ssh to {h}: no key (set `key_file`, an IdentityFile in the ssh config, "
                                 "or `agent: true`)")
    return hops + [target]


def load_openssh_config(path: Path | None, secret_env: Iterable[str] = ()) -> ConfigLookup | None:
    """A lookup over the OpenSSH client config at `path` (None: no config is read). The file and
    everything it includes is read and checked here, every line of it (a refused directive is a
    ParameterError naming file and line). `secret_env`: environment variables that hold secrets
    (never expanded, even if their names are HOME, USER or LOGNAME)."""
    if path is None:
        return None
    return openssh_config.load(path, secret_env).resolve
