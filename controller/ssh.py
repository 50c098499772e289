"""The one place that talks SSH.

One persistent connection per host (asyncssh), many channels over it, commands in
parallel across hosts. A command is an argv tuple; it becomes a string only here, with
`shlex.quote` on every element, prefixed by `env LC_ALL=C` and bounded on the remote
side by `timeout` so a stuck command never outlives its deadline. Every command, its
exit status and its output go to the command log (the run record's `commands.jsonl`).

Long-running processes (samplers, iperf3, monitors) are started with `spawn`: a constant
wrapper prints the remote PID first, so the process can be ended by the id we started,
and never by name.
"""
from __future__ import annotations

import asyncio
import json
import os
import shlex
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterable, Sequence

import asyncssh

from controller.batch import (BATCH_NAME, BATCH_SCRIPT, SCRIPT_FAILED, TIMEOUT_GRACE_S, BatchOutputError, batch_args,
                              command_timeout, parse_batch_output, split_batches)
from controller.commands import Command, CommandResult
from controller.errors import CommandFailed, ParameterError, SSHError
from controller.inventory import Inventory, Role, SSH
from controller.perhost import MultiResult, gather_hosts
from controller.sshconfig import Hop, connection_plan, load_openssh_config
from controller.streams import LineReader, bounded_lines, read_capped as _read_capped

# A constant script: data only ever arrives as positional arguments ("$@"). It prints the PID
# and the process's start time (`ps -o lstart=`, unchanged by exec; Linux and FreeBSD), which
# together identify the process for good: recovery ends a PID only if both still match. ps runs
# with TZ=UTC0 in its environment, so the start time is UTC whatever the host's zone. procps' `-q`
# reads only that PID's /proc entry (`-p` reads every process's and filters: 9-11 ms of CPU
# against 4 ms on a machine with ~300 processes, at every spawn, 22 in a run); where ps has no
# `-q` (FreeBSD) or it prints nothing, `-p` answers. Both print the same lstart field.
_SPAWN_WRAPPER = ('t=$(TZ=UTC0 ps -o lstart= -q $$ 2>/dev/null); [ -n "$t" ] || t=$(TZ=UTC0 ps -o lstart= -p $$ '
                  '2>/dev/null); echo "ctl-pid $$ $t"; exec "$@"')
_ENV_PREFIX = ("env", "LC_ALL=C", "LANG=C")
_TIMEOUT_GRACE = 2  # seconds between TERM and KILL of a remote command that ran over time
_MAX_LOGGED = 1 << 20  # bytes of stdout kept in the command log per command
# What a host may send ctl (its outputs are data, and bounded): a command's stdout (an iperf3 -J
# of a long run is tens of MB; `ctl parse` takes up to 64 MiB), its stderr, and one line of a
# long-running process's stream (the sampler's lines are a few KB). Beyond: the command fails
# with that said, the line is dropped and counted -- never an unbounded buffer in the controller.
MAX_STDOUT = 64 << 20
MAX_STDERR = 1 << 20
MAX_LINE = 1 << 20
MAX_PID_LINE = 4096      # `ctl-pid PID START`: the first line of a spawned process


# Sent once per connection: a quoted argument with a newline and a `$`, which a POSIX shell
# passes through verbatim and csh/tcsh refuses ("Unmatched '") or fish reads otherwise.
SHELL_PROBE = ("printf", "%s", "ctl-posix\n$HOME'x")
_PROBE_EXPECTED = SHELL_PROBE[2]


def shell_problem(stdout: str, stderr: str, exit_status: int | None) -> str | None:
    """What the shell probe's output says about the login shell (None: a POSIX shell)."""
    if exit_status == 0 and stdout == _PROBE_EXPECTED:
        return None
    said = " ".join((stderr or stdout).split())[:120]
    return f"the probe {shlex.join(SHELL_PROBE)!r} gave exit {exit_status}" + (f": {said}" if said else "")


def remote_command_line(argv: Sequence[str], timeout: float | None, sudo: bool = False) -> str:
    """The exact string sent to the remote shell (pure; the only place argv meets a shell)."""
    full: list[str] = []
    if sudo:
        full += ["sudo", "-n", "--"]     # outermost: the locale and the deadline hold under sudo too
    full += list(_ENV_PREFIX)
    if timeout is not None:
        full += ["timeout", "-k", str(_TIMEOUT_GRACE), f"{max(timeout, 0.1):g}"]
    full += list(argv)
    return " ".join(shlex.quote(a) for a in full)


class CommandLog:
    """Append-only record of every command (JSON lines); optional file, always in memory."""

    def __init__(self, path: Path | None = None, encode: Callable[[dict], dict] | None = None):
        self.path = path
        self._encode = encode           # a run record's line format (its times: records.command_line)
        self.entries: list[CommandResult] = []
        self._fh = open(path, "a", buffering=1) if path else None
        self.listeners: list[Callable[[CommandResult], None]] = []
        self.spawn_listeners: list[Callable[["SSHRemoteProcess"], None]] = []

    def add(self, result: CommandResult) -> None:
        self.entries.append(result)
        if self._fh:
            data = result.to_json()
            if len(data["stdout"]) > _MAX_LOGGED:
                data["stdout"] = data["stdout"][:_MAX_LOGGED]
                data["stdout_truncated"] = True
            self._fh.write(json.dumps(self._encode(data) if self._encode else data) + "\n")
        for fn in self.listeners:
            fn(result)

    def close(self) -> None:
        if self._fh:
            self._fh.close()
            self._fh = None


# What ctl runs as root on a host, by role (and shaper): named when an account cannot.
_ROOT_COMMANDS: dict[str, tuple[str, ...]] = {
    "endpoint": ("ip mptcp", "ip link", "sysctl -w", "tc", "ethtool"),
    "router": ("nft", "sysctl -w", "ip link"),
    "bridge:dummynet": ("ipfw", "sysctl -w"),
    "bridge:tc": ("tc", "ip link"),
    "bridge:dnpipe": ("dnpipe", "ip link"),
}


def root_commands(inventory: Inventory, host: str) -> tuple[str, ...]:
    """The commands ctl runs as root on `host` (pure)."""
    h = inventory.hosts[host]
    key = h.role.value + (f":{h.shaper.kind}" if h.role is Role.BRIDGE and h.shaper is not None else "")
    return _ROOT_COMMANDS.get(key, ())


@dataclass
class HostTarget:
    name: str
    address: str
    ssh: SSH
    root_commands: tuple[str, ...] = ()

    @property
    def sudo(self) -> bool:
        return self.ssh.sudo


def targets(inventory: Inventory, hosts: Iterable[str] | None = None) -> list[HostTarget]:
    out = []
    for name in (hosts if hosts is not None else sorted(inventory.hosts)):
        ssh = inventory.ssh_for(name)
        if ssh is None or inventory.hosts[name].role is Role.SWITCH:
            continue  # switches are SNMP-only
        out.append(HostTarget(name, inventory.hosts[name].mgmt.address, ssh, root_commands(inventory, name)))
    return out


def _reason(exc: BaseException, timeout: float | None = None) -> str:
    """What happened, in words, never empty: a timeout (asyncio's carries no text) says after how
    long, an OS error says its errno's meaning ("connection refused", "no route to host") rather
    than asyncio's "Connect call failed (...)", an SSH error its reason or its kind and code."""
    if isinstance(exc, TimeoutError) and not getattr(exc, "errno", None):
        return f"timed out after {timeout:g} s" if timeout else "timed out"
    if isinstance(exc, OSError):
        if exc.errno and exc.errno > 0:
            words = os.strerror(exc.errno)
            words = words[:1].lower() + words[1:]
            return words if not exc.filename else f"{exc.filename}: {words}"
        if exc.strerror:                     # a resolver error (socket.gaierror: negative errno)
            return f"cannot resolve the address: {exc.strerror}" if isinstance(exc, socket.gaierror) else exc.strerror
    if isinstance(exc, asyncssh.Error):
        code = f" (code {exc.code})" if getattr(exc, "code", None) else ""
        return str(exc.reason or "").strip() or f"SSH {type(exc).__name__}{code}"
    return str(exc).strip() or type(exc).__name__


def _ack_at_once(conn: asyncssh.SSHClientConnection) -> None:
    """Acknowledge what a bastion sends at once (TCP_QUICKACK after every read, Linux).

    sshd leaves Nagle's algorithm on for a connection without an interactive session, which a
    jump connection is: the bastion holds back its next small packet until our ACK, which the
    kernel delays by up to 40 ms. Measured on the virtual rack (bench/ssh_access_bench.py): a
    command through the bastion took 44 ms against 5.7 ms directly; this brings it back."""
    sock = conn.get_extra_info("socket")
    quickack = getattr(socket, "TCP_QUICKACK", None)
    if sock is None or quickack is None:
        return
    received = conn.data_received

    def data_received(data: bytes, datatype: Any = None) -> None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
        except OSError:
            pass
        received(data, datatype)
    conn.data_received = data_received  # type: ignore[method-assign]


def _client_keys(ssh: SSH, hop: Hop, host: str) -> list | None:
    """The hop's private keys, loaded here so an encrypted one is a clear error, never a prompt."""
    keys = []
    passphrase = ssh.key_passphrase.resolve(f"{host}: ssh key_passphrase") if ssh.key_passphrase else None
    for path in hop.key_files:
        if not path.exists():
            if ssh.agent:
                continue
            raise SSHError(host, f"key file {path} does not exist")
        try:
            keys.append(asyncssh.read_private_key(str(path), passphrase))
        except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
            if "passphrase" in str(exc).lower() or "encrypted" in str(exc).lower():
                hint = ("the key_passphrase given does not open it" if passphrase is not None else
                        "load it into ssh-agent and set `agent: true`, or give `key_passphrase` (a secret reference)")
                raise SSHError(host, f"key file {path} is protected by a passphrase: {hint}") from None
            raise SSHError(host, f"key file {path}: {exc}") from None
        except OSError as exc:
            raise SSHError(host, f"key file {path}: {exc.strerror or exc}") from None
    return keys or None


class SSHSession:
    """A Session (see controller.commands) over one persistent SSH connection."""

    def __init__(self, target: HostTarget, log: CommandLog):
        self.host = target.name
        self.target = target
        self.log = log
        self._conn: asyncssh.SSHClientConnection | None = None
        self._tunnels: list[asyncssh.SSHClientConnection] = []
        self._lock = asyncio.Lock()
        self._procs: list["SSHRemoteProcess"] = []
        self.lost: str | None = None
        self.route: list[str] = []        # the hops of the last connection, bastions first
        self.batching = True              # consecutive commands go in one round trip (run_batch)
        self._hops: list[Hop] | None = None
        self.echo: Any = None             # a clock echo kept open on this connection (clocksync.ClockEcho.kept)

    def plan(self) -> list[Hop]:
        """The hops to this host, worked out once (the OpenSSH config, if any, read and checked
        here): bad settings or a refused config are a ParameterError (exit 2), before connecting."""
        if self._hops is None:
            t = self.target
            secrets = [t.ssh.key_passphrase.env] if t.ssh.key_passphrase and t.ssh.key_passphrase.env else []
            try:
                self._hops = connection_plan(t.ssh, t.address, load_openssh_config(t.ssh.config_file, secrets))
            except ParameterError as exc:
                raise ParameterError(f"{self.host}: {exc}") from None
        return self._hops

    async def _open(self, hop: Hop, tunnel: asyncssh.SSHClientConnection | None,
                    what: str) -> asyncssh.SSHClientConnection:
        t = self.target
        agent_path = None
        if t.ssh.agent:
            agent_path = os.environ.get("SSH_AUTH_SOCK")
            if not agent_path:
                raise SSHError(self.host, "ssh `agent: true` but SSH_AUTH_SOCK is not set (no ssh-agent)")
        keys = _client_keys(t.ssh, hop, self.host) or []
        agent = None
        if agent_path is not None:
            # The agent's keys are handed to asyncssh as keys (agent first, as OpenSSH does), so no
            # default key file of this machine is ever tried and nothing can forward the agent.
            try:
                agent = await asyncssh.connect_agent(agent_path)
                keys = list(await agent.get_keys()) + keys if agent is not None else keys
            except (OSError, asyncssh.Error, ValueError) as exc:
                raise SSHError(self.host, f"ssh-agent at $SSH_AUTH_SOCK: {_reason(exc)}") from None
        try:
            if not keys:
                raise SSHError(self.host, f"{what} {hop}: no key to log in with"
                                          + (" (the ssh-agent holds none)" if agent_path else ""))
            return await asyncio.wait_for(asyncssh.connect(
                hop.host, port=hop.port, username=hop.user, tunnel=tunnel,
                client_keys=keys, known_hosts=str(t.ssh.known_hosts),
                agent_path=None, agent_forwarding=False, config=[], ignore_encrypted=True,
                password=None, kbdint_auth=False, gss_host=None, preferred_auth="publickey",
                keepalive_interval=5, keepalive_count_max=3,
                connect_timeout=t.ssh.connect_timeout), t.ssh.connect_timeout + 1)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise SSHError(self.host, f"{what}: host key of {hop.host} not verifiable with "
                                      f"{t.ssh.known_hosts}: {exc.reason}") from None
        except asyncssh.PermissionDenied:
            how = ", ".join(x for x in ((f"key {', '.join(map(str, hop.key_files))}" if hop.key_files else ""),
                                        "ssh-agent" if agent_path else "") if x)
            raise SSHError(self.host, f"{what} {hop.user}@{hop.host}: permission denied ({how})") from None
        except (OSError, asyncio.TimeoutError, asyncssh.Error) as exc:
            raise SSHError(self.host, f"cannot connect to {what} {hop.host}:{hop.port}: "
                                      f"{_reason(exc, t.ssh.connect_timeout)}") from None
        finally:
            if agent is not None:
                agent.close()

    async def connect(self) -> None:
        async with self._lock:
            if self._conn is not None:
                return
            t = self.target
            hops = self.plan()
            if not t.ssh.known_hosts.exists():
                raise SSHError(self.host, f"known_hosts file {t.ssh.known_hosts} does not exist")
            tunnel = None
            try:
                for i, hop in enumerate(hops[:-1]):
                    tunnel = await self._open(hop, tunnel, f"bastion {i + 1}")
                    _ack_at_once(tunnel)
                    self._tunnels.append(tunnel)
                self._conn = await self._open(hops[-1], tunnel, "host" if not tunnel else "host (via bastion)")
                await self._check_shell()
                await self._check_privileges()
            except BaseException:
                self._abort()
                raise
            self.route = [str(h) for h in hops]
            self.lost = None

    def _connections(self) -> list[asyncssh.SSHClientConnection]:
        """The host's connection, then the bastions' in reverse order (the way they are torn down)."""
        return ([self._conn] if self._conn is not None else []) + self._tunnels[::-1]

    def _abort(self) -> None:
        for c in self._connections():
            c.abort()
        self._conn = None
        self._tunnels = []
        self.echo = None

    async def _check_privileges(self) -> None:
        """The account can run what ctl runs on this host: through `sudo -n` when the inventory
        says so (a password prompt, a missing rule or requiretty refused here), or as root."""
        t = self.target
        if not t.ssh.sudo and t.ssh.user == "root":
            return
        assert self._conn is not None
        try:
            r = await asyncio.wait_for(self._conn.run(remote_command_line(("id", "-u"), 10, t.ssh.sudo)), 15)
        except (OSError, asyncio.TimeoutError, asyncssh.Error) as exc:
            raise SSHError(self.host, f"cannot run a command: {_reason(exc, 15)}") from None
        uid = _text(r.stdout).strip()
        said = " ".join(_text(r.stderr).split())[:160]
        needs = ", ".join(t.root_commands) or "its commands"
        who = f"{t.ssh.user}@{t.address}"
        if t.ssh.sudo and (r.exit_status != 0 or uid != "0"):
            raise SSHError(self.host, f"{who}: `sudo -n` cannot run {needs} as root "
                                      f"({said or f'exit {r.exit_status}, uid {uid!r}'}); give the account "
                                      "passwordless sudo "
                                      "(docs/howto/physical-rack.md, \"Reaching the rack as the lab does\")")
        if not t.ssh.sudo and uid != "0" and t.root_commands:
            raise SSHError(self.host, f"{who} is uid {uid or '?'}, not root, and `sudo` is off: ctl runs {needs} "
                                      "as root here; set `ssh: {sudo: true}` for this host or log in as root")

    async def _check_shell(self) -> None:
        """Remote commands are POSIX sh command lines (quoted by `shlex.quote`): refuse an account
        whose login shell reads them otherwise (tcsh, fish), before anything is sent."""
        assert self._conn is not None
        try:
            r = await asyncio.wait_for(self._conn.run(remote_command_line(SHELL_PROBE, 10)), 15)
        except (OSError, asyncio.TimeoutError, asyncssh.Error) as exc:
            raise SSHError(self.host, f"cannot run a command: {_reason(exc, 15)}") from None
        problem = shell_problem(_text(r.stdout), _text(r.stderr), r.exit_status)
        if problem:
            raise SSHError(self.host, f"{self.target.ssh.user}'s login shell on {self.target.address} is not a "
                                      f"POSIX shell ({problem}); ctl needs sh, bash, dash or ksh there")

    @property
    def connected(self) -> bool:
        """An open connection that has not been seen to fail."""
        return self._conn is not None and self.lost is None

    async def ensure_connected(self, within_s: float, retry_every_s: float = 1.0) -> bool:
        """Connected now, or (re)connect, retrying until `within_s` has passed; False if not."""
        if self.connected:
            return True
        deadline = time.monotonic() + within_s
        while True:
            try:
                await self.connect()
                return True
            except SSHError:
                if time.monotonic() + retry_every_s >= deadline:
                    return False
                await asyncio.sleep(retry_every_s)

    def _connection(self) -> asyncssh.SSHClientConnection:
        if self._conn is None:
            raise SSHError(self.host, "not connected")
        return self._conn

    async def run(self, command: Command) -> CommandResult:
        if isinstance(command, (list, tuple)):
            command = Command(tuple(command))
        timeout = min(command.timeout, self.target.ssh.command_timeout) if command.timeout else \
            self.target.ssh.command_timeout
        line = remote_command_line(command.argv, timeout, self.target.sudo)
        started = time.time()
        t0 = time.monotonic()
        try:
            await self.connect()
            status, out, err = await asyncio.wait_for(self._run_capped(line, command.stdin),
                                                      timeout + _TIMEOUT_GRACE + 3)
            if status in (124, 137):  # timeout(1): TERM sent (124) or KILLed after grace (137)
                status = None if time.monotonic() - t0 >= timeout else status
            result = CommandResult(self.host, command.argv, status, out, err,
                                   started=started, duration=time.monotonic() - t0, note=command.note)
        except asyncio.TimeoutError:
            result = CommandResult(self.host, command.argv, None, "", "timed out (no answer from host)",
                                   started=started, duration=time.monotonic() - t0, note=command.note)
        except (asyncssh.Error, OSError, ConnectionError) as exc:
            self.mark_lost(exc)
            result = CommandResult(self.host, command.argv, None, "", f"connection lost: {_reason(exc)}",
                                   started=started, duration=time.monotonic() - t0, note=command.note)
            self.log.add(result)
            raise SSHError(self.host, f"connection lost during `{command.text()[:120]}`: {_reason(exc)}") from None
        self.log.add(result)
        return result

    async def _run_capped(self, line: str, stdin: str | None, binary: bool = False) -> tuple[int | None, Any, str]:
        """(exit status, stdout, stderr) of one remote command line, each stream read in chunks up
        to its cap (MAX_STDOUT, MAX_STDERR): a host that sends more is cut off, the command counts
        as failed (status None) and its stderr says why. `binary`: stdout as bytes (a batch's
        frames count bytes)."""
        proc = await self._connection().create_process(line, encoding=None if binary else "utf-8",
                                                       errors="replace")
        if stdin:                      # as asyncssh's run(input=...): given input, then EOF
            proc.stdin.write(stdin)
            proc.stdin.write_eof()
        empty = b"" if binary else ""
        (out, out_over), (err, err_over) = await asyncio.gather(_read_capped(proc.stdout, MAX_STDOUT, empty),
                                                                _read_capped(proc.stderr, MAX_STDERR, empty))
        if binary:
            err = _text(err)
        if out_over or err_over:
            proc.close()
            which = "stdout" if out_over else "stderr"
            cap = MAX_STDOUT if out_over else MAX_STDERR
            return None, out, (err + f"\nctl: the host sent more than {cap >> 20} MiB on {which}: cut off").lstrip()
        completed = await proc.wait(check=False)
        status = completed.exit_status
        if status is None and completed.exit_signal:
            status = None
        return status, out, err

    async def run_batch(self, commands: Sequence[Command]) -> list[CommandResult]:
        """`commands` in order in one round trip per group (controller.batch), each logged as its
        own result: all of them, or up to the first failing one with `check` (as run_all). A host
        whose shell cannot run the batch script gets the commands one by one from then on."""
        results: list[CommandResult] = []
        for group in split_batches(commands):
            if len(group) == 1 or not self.batching:
                for c in group:
                    results.append(await self.run(c))
                    if c.check and not results[-1].ok:
                        return results
                continue
            got = await self._run_group(group)
            results += got
            if got and group[len(got) - 1].check and not got[-1].ok:
                return results
            for c in group[len(got):]:      # the batch was cut short: the rest one by one
                results.append(await self.run(c))
                if c.check and not results[-1].ok:
                    return results
        return results

    async def _run_group(self, group: Sequence[Command]) -> list[CommandResult]:
        cap = self.target.ssh.command_timeout
        total = sum(command_timeout(c, cap) + TIMEOUT_GRACE_S for c in group)
        line = remote_command_line(("sh", "-c", BATCH_SCRIPT, BATCH_NAME, *batch_args(group, cap)), total,
                                   self.target.sudo)
        started, t0 = time.time(), time.monotonic()
        what = f"{len(group)} commands from `{group[0].text()[:80]}`"
        try:
            await self.connect()
            status, out, err = await asyncio.wait_for(self._run_capped(line, None, binary=True), total + 5)
        except asyncio.TimeoutError:
            status, out, err = None, b"", "timed out (no answer from host)"
        except (asyncssh.Error, OSError, ConnectionError) as exc:
            self.mark_lost(exc)
            self.log.add(CommandResult(self.host, group[0].argv, None, "", f"connection lost: {_reason(exc)}",
                                       started=started, duration=time.monotonic() - t0, note=group[0].note))
            raise SSHError(self.host, f"connection lost during {what}: {_reason(exc)}") from None
        duration = time.monotonic() - t0
        try:
            frames = parse_batch_output(out)
        except BatchOutputError as exc:
            raise SSHError(self.host, f"batch of {what}: {exc}") from None
        if not frames and status in (SCRIPT_FAILED, 126, 127):
            self.batching = False       # nothing ran: this host runs them one by one
            return [await self.run(c) for c in group]
        results = []
        for i, (c, (st, o, e)) in enumerate(zip(group, frames)):
            st_or_none: int | None = st
            if st in (124, 137) and duration >= command_timeout(c, self.target.ssh.command_timeout):
                st_or_none = None           # timeout(1) ended it at its deadline
            results.append(CommandResult(self.host, c.argv, st_or_none, o.decode("utf-8", "replace"),
                                         e.decode("utf-8", "replace"), started=started, duration=duration,
                                         note=(c.note + " " if c.note else "") + f"[batch {i + 1}/{len(group)}]"))
        done = len(results)
        if done < len(group) and not (done and group[done - 1].check and not results[-1].ok):
            # The batch ended early without a failing check: the next command did not finish.
            results.append(CommandResult(self.host, group[done].argv, None, "",
                                         (err or f"batch ended (exit {status})").strip()[:2000],
                                         started=started, duration=duration, note=group[done].note))
        for r in results:
            self.log.add(r)
        return results

    async def check(self, command: Command) -> CommandResult:
        result = await self.run(command)
        if not result.ok:
            raise CommandFailed(self.host, command.argv, result.exit_status, result.stderr or result.stdout)
        return result

    async def spawn(self, argv: Sequence[str], *, note: str = "", stdin_open: bool = False) -> "SSHRemoteProcess":
        await self.connect()
        line = remote_command_line(("sh", "-c", _SPAWN_WRAPPER, "ctl-spawn", *argv), None, self.target.sudo)
        try:
            proc = await self._connection().create_process(line, encoding="utf-8", errors="replace")
        except (asyncssh.Error, OSError) as exc:
            self.mark_lost(exc)
            raise SSHError(self.host, f"cannot start `{shlex.join(argv)[:120]}`: {exc}") from None
        rp = SSHRemoteProcess(self, tuple(argv), proc, note)
        await rp.read_pid()
        for fn in self.log.spawn_listeners:
            fn(rp)
        if not stdin_open:
            proc.stdin.write_eof()
        self._procs.append(rp)
        return rp

    def mark_lost(self, exc: BaseException) -> None:
        self.lost = _reason(exc)
        self._abort()

    async def close(self) -> None:
        for c in self._connections():
            c.close()
            try:
                await asyncio.wait_for(c.wait_closed(), 2)
            except (asyncio.TimeoutError, asyncssh.Error, OSError):
                pass
        self._conn = None
        self._tunnels = []
        self.echo = None


def _text(data: Any) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return str(data)


class SSHRemoteProcess:
    """A remote long-running process; its stdout is consumed line by line."""

    def __init__(self, session: SSHSession, argv: tuple[str, ...], proc: asyncssh.SSHClientProcess, note: str):
        self.session = session
        self.host = session.host
        self.argv = argv
        self.note = note
        self.pid: int | None = None
        self.host_start: str | None = None      # `ps -o lstart=` of the process, on the host, in UTC
        self._proc = proc
        self._stdout = LineReader(proc.stdout)      # the first lines one by one, then `lines()`
        self.started = time.time()
        self._t0 = time.monotonic()
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        self._stderr: list[str] = []
        self.stdout_lines = 0
        self.dropped_lines = 0
        self._result: CommandResult | None = None

    async def read_pid(self) -> None:
        try:
            first, over = await asyncio.wait_for(self._stdout.readline(MAX_PID_LINE), 15)
        except asyncio.TimeoutError:
            raise SSHError(self.host, f"`{shlex.join(self.argv)[:120]}` did not start") from None
        if over or not first.startswith("ctl-pid "):
            raise SSHError(self.host, f"`{shlex.join(self.argv)[:120]}` did not start: {first.strip()[:200]!r}")
        _tag, pid, *start = first.split()
        self.pid = int(pid)
        self.host_start = " ".join(start) or None

    async def _drain_stderr(self) -> None:
        try:
            async for line in bounded_lines(self._proc.stderr, MAX_STDERR):
                if len(self._stderr) < 2000:
                    self._stderr.append(line + "\n")
        except (asyncssh.Error, OSError):
            pass

    def _dropped(self, length: int) -> None:
        self.dropped_lines += 1

    async def lines(self) -> AsyncIterator[str]:
        """The process's stdout, line by line; a line over MAX_LINE is dropped and counted
        (`dropped_lines`), never buffered whole."""
        try:
            async for line in bounded_lines(self._stdout, MAX_LINE, self._dropped):
                self.stdout_lines += 1
                yield line
        except (asyncssh.Error, OSError, ConnectionError) as exc:
            self.session.mark_lost(exc)
            raise SSHError(self.host, f"lost the stream of `{shlex.join(self.argv)[:80]}`: {exc}") from None

    def send_line(self, text: str) -> None:
        self._proc.stdin.write(text + "\n")

    async def readline(self, timeout: float = 5.0) -> str:
        try:
            line, over = await asyncio.wait_for(self._stdout.readline(MAX_LINE), timeout)
        except (asyncssh.Error, OSError, ConnectionError) as exc:
            self.session.mark_lost(exc)
            raise SSHError(self.host, f"lost `{shlex.join(self.argv)[:80]}`: {exc}") from None
        if over:
            raise SSHError(self.host, f"`{shlex.join(self.argv)[:80]}` sent a line over {MAX_LINE >> 20} MiB")
        return line.rstrip("\n")

    async def read_all(self) -> str:
        return "\n".join([line async for line in self.lines()])

    def close_stdin(self) -> None:
        try:
            self._proc.stdin.write_eof()
        except (asyncssh.Error, OSError, BrokenPipeError):
            pass

    async def wait(self, timeout: float | None = None, stdout: str = "") -> CommandResult:
        if self._result is not None:
            return self._result
        status: int | None
        try:
            completed = await asyncio.wait_for(self._proc.wait(check=False), timeout)
            status = completed.exit_status
        except asyncio.TimeoutError:
            status = None
        except (asyncssh.Error, OSError):
            status = None
        try:
            await asyncio.wait_for(self._stderr_task, 2)
        except (asyncio.TimeoutError, asyncssh.Error, OSError):
            pass
        self._result = CommandResult(self.host, self.argv, status,
                                     stdout or f"({self.stdout_lines} lines streamed)",
                                     "".join(self._stderr), started=self.started,
                                     duration=time.monotonic() - self._t0, note=self.note)
        self.session.log.add(self._result)
        return self._result

    async def terminate(self, grace: float = 3.0) -> None:
        """End the remote process by its PID: TERM, then KILL after `grace` seconds."""
        if self._result is not None or self.pid is None:
            return
        if self._proc.exit_status is not None:
            return
        try:
            await self.session.run(Command(("kill", "-TERM", str(self.pid)), timeout=10, check=False,
                                           mutates=True, note=f"stop {self.argv[0]}"))
            try:
                await asyncio.wait_for(asyncio.shield(self._proc.wait_closed()), grace)
            except asyncio.TimeoutError:
                await self.session.run(Command(("kill", "-KILL", str(self.pid)), timeout=10, check=False,
                                               mutates=True, note=f"kill {self.argv[0]} after {grace}s"))
        except SSHError:
            pass


class SSHPool:
    """Sessions for a set of hosts; connects in parallel, closes everything on exit."""

    def __init__(self, inventory: Inventory, log: CommandLog, hosts: Iterable[str] | None = None):
        self.log = log
        self.sessions: dict[str, SSHSession] = {t.name: SSHSession(t, log) for t in targets(inventory, hosts)}

    def __getitem__(self, host: str) -> SSHSession:
        try:
            return self.sessions[host]
        except KeyError:
            raise SSHError(host, "not an SSH-reachable host of this inventory") from None

    async def connect_all(self) -> MultiResult[None]:
        """Connect every host not connected, at once; each host's outcome, nothing raised (perhost).
        Every route is worked out first: a host whose route is refused (its OpenSSH config) has that
        ParameterError as its outcome. A connection lost since (a pool kept across a campaign's runs)
        is connected again."""
        async def plan(h: str) -> None:
            if (s := self.sessions[h])._conn is not None and s._conn.is_closed():
                s._abort()
            s.plan()
        out = await gather_hosts(self.sessions, plan)
        out.update(await gather_hosts([h for h, r in out.items() if not r.failed],
                                      lambda h: self.sessions[h].connect()))
        return out

    def borrow(self, lender: "SSHPool") -> list[str]:
        """Take over the lender's open connections to this pool's hosts (connected and checked
        moments ago, e.g. by a campaign's health check): those hosts are not connected again.
        Closed or lost ones are left; `give_back` returns what is still open."""
        taken = []
        for h, mine in self.sessions.items():
            theirs = lender.sessions.get(h)
            if theirs is None or mine._conn is not None or not theirs.connected or theirs._conn.is_closed():
                continue
            mine._conn, mine._tunnels, mine.route, mine.echo = theirs._conn, theirs._tunnels, theirs.route, theirs.echo
            theirs._conn, theirs._tunnels, theirs.echo = None, [], None
            taken.append(h)
        return taken

    def give_back(self, lender: "SSHPool") -> None:
        """Return the open connections to the lender (whose sessions have none of their own)."""
        for h, mine in self.sessions.items():
            theirs = lender.sessions.get(h)
            if theirs is None or theirs._conn is not None or not mine.connected or mine._conn.is_closed():
                continue
            theirs._conn, theirs._tunnels, theirs.route, theirs.lost = mine._conn, mine._tunnels, mine.route, None
            theirs.echo = mine.echo
            mine._conn, mine._tunnels, mine.echo = None, [], None

    def set_log(self, log: CommandLog) -> None:
        self.log = log
        for s in self.sessions.values():
            s.log = log

    async def run_parallel(self, commands: dict[str, Command]) -> dict[str, CommandResult]:
        """One command per host, all at once."""
        hosts = list(commands)
        results = await asyncio.gather(*(self[h].run(commands[h]) for h in hosts))
        return dict(zip(hosts, results))

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sessions.values()), return_exceptions=True)

    async def __aenter__(self) -> "SSHPool":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
