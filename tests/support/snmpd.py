"""Real net-snmp agents for tests and benchmarks, plus traffic to make their counters move.

* `Netns`: a network namespace this process created (name prefix enforced), deleted on exit.
* `veth(...)`: a veth pair between the root namespace and a `Netns`, addressed and up.
* `Snmpd`: one snmpd process with a generated config (controller.lab.snmpd_conf, the
  same generator the virtual rack uses), its own persistent dir, started in the foreground
  (`-f`) so the PID we hold is the agent's; stopped (and only ever signalled) by that PID.
* `udp_blast(...)`: paced UDP traffic with exact byte accounting.

Nothing here uses a shell; every command is an argv list. Requires root for namespaces.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from controller.lab.snmpd_conf import render_snmpd_conf, snmpd_argv, snmpd_env

SNMPD = shutil.which("snmpd") or "/usr/sbin/snmpd"
IP = shutil.which("ip") or "/usr/sbin/ip"
# Ethernet header (14) + IPv4 (20) + UDP (8): what a veth's rx_bytes counts on top of the payload.
UDP_OVERHEAD_L2 = 42


def have_snmpd() -> bool:
    return Path(SNMPD).exists()


def is_root() -> bool:
    return os.geteuid() == 0


def free_udp_port(host: str = "127.0.0.1") -> int:
    """A UDP port free on `host` right now (the usual small race is acceptable in tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True, timeout=30)


# ---- namespaces and links ------------------------------------------------------------------

class Netns:
    """A network namespace created (and deleted) by this object. Use as a context manager."""

    def __init__(self, prefix: str, token: str | None = None) -> None:
        if not prefix.isalnum() or not prefix.islower():
            raise ValueError("namespace prefix: lower-case letters/digits")
        self.prefix = prefix
        self.name = f"{prefix}{token or secrets.token_hex(3)}"
        self.created = False

    def create(self) -> "Netns":
        _run([IP, "netns", "add", self.name])
        self.created = True
        _run([IP, "-n", self.name, "link", "set", "lo", "up"])
        return self

    def argv(self, *argv: str) -> list[str]:
        """argv to run a command inside the namespace (`ip netns exec` execs it: same PID)."""
        return [IP, "netns", "exec", self.name, *argv]

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return _run(self.argv(*argv), check=check)

    def delete(self) -> None:
        # Only a namespace this object created; links inside it disappear with it.
        if self.created:
            _run([IP, "netns", "del", self.name], check=False)
            self.created = False

    def __enter__(self) -> "Netns":
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.delete()


@dataclass
class Veth:
    root_if: str
    ns_if: str
    root_addr: str          # without prefix length
    ns_addr: str
    netns: Netns

    def delete(self) -> None:
        # Deleting either end deletes the pair; the namespace's deletion does it too.
        _run([IP, "link", "del", self.root_if], check=False)


def veth(netns: Netns, root_if: str, ns_if: str, subnet: str, *, ipv6: bool = False) -> Veth:
    """veth root_if (root ns, first host of `subnet`) <-> ns_if (in netns, second host).

    IPv6 is off by default: a fresh link sends router solicitations and MLD reports for
    seconds, which show up in the counters a test wants to compare with what it sent.
    """
    if len(root_if) > 15 or len(ns_if) > 15:
        raise ValueError("interface names are at most 15 characters")
    net = ipaddress.ip_network(subnet)
    hosts = list(net.hosts())
    a, b = hosts[0], hosts[1]
    _run([IP, "link", "add", root_if, "type", "veth", "peer", "name", ns_if, "netns", netns.name])
    v = Veth(root_if, ns_if, str(a), str(b), netns)
    try:
        if not ipv6:
            Path(f"/proc/sys/net/ipv6/conf/{root_if}/disable_ipv6").write_text("1\n")
            netns.run("sysctl", "-q", "-w", f"net.ipv6.conf.{ns_if}.disable_ipv6=1")
        _run([IP, "addr", "add", f"{a}/{net.prefixlen}", "dev", root_if])
        _run([IP, "link", "set", root_if, "up"])
        netns.run(IP, "addr", "add", f"{b}/{net.prefixlen}", "dev", ns_if)
        netns.run(IP, "link", "set", ns_if, "up")
    except Exception:
        v.delete()
        raise
    return v


# ---- credentials ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SnmpCreds:
    community: str
    user: str
    auth_key: str
    priv_key: str
    auth_protocol: str = "sha"
    priv_protocol: str = "aes"

    @classmethod
    def random(cls, auth_protocol: str = "sha", priv_protocol: str = "aes") -> "SnmpCreds":
        return cls(community="c" + secrets.token_hex(8), user="ctl" + secrets.token_hex(3),
                   auth_key="a" + secrets.token_hex(10), priv_key="p" + secrets.token_hex(10),
                   auth_protocol=auth_protocol, priv_protocol=priv_protocol)

    def __repr__(self) -> str:  # never print the secrets in test output
        return f"SnmpCreds(user={self.user!r}, auth={self.auth_protocol}, priv={self.priv_protocol}, <secrets>)"

    def env(self, prefix: str) -> dict[str, str]:
        """Environment variables holding the secrets, for inventory SecretRef(env=...)."""
        return {f"{prefix}_COMMUNITY": self.community, f"{prefix}_AUTH": self.auth_key,
                f"{prefix}_PRIV": self.priv_key}


# ---- one agent -----------------------------------------------------------------------------

def _ber_len(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _tlv(tag: int, body: bytes) -> bytes:
    return bytes([tag]) + _ber_len(len(body)) + body


def _ber_oid(oid: str) -> bytes:
    parts = [int(x) for x in oid.split(".")]
    out = bytearray([40 * parts[0] + parts[1]])
    for p in parts[2:]:
        chunk = [p & 0x7F]
        p >>= 7
        while p:
            chunk.append(0x80 | (p & 0x7F))
            p >>= 7
        out += bytes(reversed(chunk))
    return _tlv(0x06, bytes(out))


def v2c_get_packet(community: str, oid: str = "1.3.6.1.2.1.1.3.0", request_id: int = 1) -> bytes:
    """A minimal SNMPv2c GetRequest (no pysnmp needed to probe an agent)."""
    vb = _tlv(0x30, _ber_oid(oid) + b"\x05\x00")
    pdu = _tlv(0xA0, _tlv(0x02, struct.pack(">I", request_id)) + b"\x02\x01\x00\x02\x01\x00" + _tlv(0x30, vb))
    return _tlv(0x30, b"\x02\x01\x01" + _tlv(0x04, community.encode()) + pdu)


@dataclass
class Snmpd:
    """One snmpd. `listen` is ADDRESS:PORT reachable from this process (the readiness probe
    sends a v2c GET there). With `netns`, the agent runs inside that namespace."""

    workdir: Path
    listen: str
    creds: SnmpCreds
    netns: Netns | None = None
    name: str = "snmpd"
    proc: subprocess.Popen | None = field(default=None, repr=False)
    starts: int = 0

    @property
    def address(self) -> str:
        return self.listen.rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def conf_path(self) -> Path:
        return self.workdir / f"{self.name}.conf"

    @property
    def persist_dir(self) -> Path:
        return self.workdir / f"{self.name}.persist"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def start(self, timeout: float = 10.0) -> "Snmpd":
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"{self.name} already running (pid {self.proc.pid})")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.persist_dir.mkdir(mode=0o700, exist_ok=True)
        text = render_snmpd_conf(self.listen, self.creds.community, self.creds.user, self.creds.auth_key,
                                 self.creds.priv_key, auth_protocol=self.creds.auth_protocol,
                                 priv_protocol=self.creds.priv_protocol, sys_name=self.name)
        fd = os.open(self.conf_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        argv = snmpd_argv(self.conf_path, snmpd=SNMPD)
        if self.netns is not None:
            argv = self.netns.argv(*argv)
        log = open(self.log_path, "ab")
        try:
            # New session: a Ctrl-C aimed at pytest does not hit the agent before we stop it.
            self.proc = subprocess.Popen(argv, env=snmpd_env(self.persist_dir, dict(os.environ)),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        finally:
            log.close()
        self.starts += 1
        try:
            self.wait_ready(timeout)
        except Exception:
            self.stop()
            raise
        return self

    def answers(self, timeout: float = 0.3) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout)
            try:
                s.sendto(v2c_get_packet(self.creds.community, request_id=secrets.randbits(31)),
                         (self.address, self.port))
                data, _ = s.recvfrom(4096)
                return len(data) > 0
            except OSError:
                return False

    def wait_ready(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode if self.proc else '?'}): "
                                   f"{self.log_tail()}")
            if self.answers():
                return
            time.sleep(0.05)
        raise TimeoutError(f"{self.name} did not answer on {self.listen} within {timeout} s: {self.log_tail()}")

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM our PID, SIGKILL it if it lingers. Never any other process."""
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)   # a paused agent cannot act on SIGTERM
                p.send_signal(signal.SIGTERM)
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout)
            except ProcessLookupError:
                pass
        self.proc = None

    def kill(self) -> None:
        """SIGKILL our PID (a crash, not a shutdown)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self.proc = None

    def restart(self, down_s: float = 0.0, timeout: float = 10.0) -> "Snmpd":
        """Stop and start again with the same config and persistent dir (same v3 engineID)."""
        self.stop()
        if down_s:
            time.sleep(down_s)
        return self.start(timeout)

    def pause(self) -> None:
        """SIGSTOP our PID: the agent hangs (no answers), like a wedged switch CPU."""
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGCONT)

    def log_tail(self, n: int = 20) -> str:
        try:
            return " | ".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> "Snmpd":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def loopback_agents(workdir: Path, n: int, creds: SnmpCreds, *, base: str = "127.77.0.0",
                    name: str = "agent") -> list[Snmpd]:
    """n agents on distinct 127.x addresses (Linux answers all of 127/8 on lo), free ports.

    Not started; start them with start_all() so that a failure stops the ones already up.
    """
    net = ipaddress.ip_address(base)
    out = []
    for i in range(n):
        addr = str(net + 1 + i)
        out.append(Snmpd(workdir, f"{addr}:{free_udp_port(addr)}", creds, name=f"{name}{i}"))
    return out


def start_all(agents: Sequence[Snmpd], timeout: float = 15.0) -> None:
    started: list[Snmpd] = []
    try:
        for a in agents:
            a.start(timeout)
            started.append(a)
    except Exception:
        for a in started:
            a.stop()
        raise


def stop_all(agents: Sequence[Snmpd]) -> None:
    errors = []
    for a in agents:
        try:
            a.stop()
        except Exception as exc:  # keep stopping the others
            errors.append(exc)
    if errors:
        raise errors[0]


# ---- traffic -------------------------------------------------------------------------------

@dataclass
class BlastResult:
    frames: int
    payload_bytes: int
    started_mono: float
    ended_mono: float

    @property
    def l2_bytes(self) -> int:
        """Bytes an Ethernet/veth interface counts for these frames (ifHCInOctets on Linux)."""
        return self.payload_bytes + self.frames * UDP_OVERHEAD_L2

    @property
    def duration(self) -> float:
        return self.ended_mono - self.started_mono


def udp_blast(dst: str, port: int = 9, *, payload: int = 1000, pps: float = 1000.0, seconds: float = 5.0,
              src: str | None = None) -> BlastResult:
    """Paced UDP frames from this namespace: `pps` frames of `payload` bytes for `seconds`.

    Paced in 10 ms slices (Python's sleep is not precise enough per frame). The return value
    counts what the kernel accepted, so rates can be checked against it.
    """
    if payload < 1 or payload > 1472:
        raise ValueError("payload must fit one 1500-byte frame")
    data = os.urandom(payload)
    frames = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        if src:
            s.bind((src, 0))
        t0 = time.monotonic()
        end = t0 + seconds
        while True:
            now = time.monotonic()
            if now >= end:
                break
            due = int((now - t0) * pps)
            while frames < due:
                try:
                    s.sendto(data, (dst, port))
                    frames += 1
                except BlockingIOError:
                    break
            time.sleep(0.01)
        t1 = time.monotonic()
    return BlastResult(frames, frames * payload, t0, t1)


def ping_flood_argv(dst: str, count: int = 1000, size: int = 1000, netns: Netns | None = None) -> list[str]:
    """`ping -f` argv (root), optionally from inside a namespace."""
    argv = ["ping", "-q", "-f", "-c", str(count), "-s", str(size), dst]
    return netns.argv(*argv) if netns else argv
