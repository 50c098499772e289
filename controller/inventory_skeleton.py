"""`ctl inventory init`: a commented inventory written from a few flags (pure: flags in, text out).

The skeleton is a dumbbell per bridge: every bridge carries one link (`path1`, `path2`, ...),
the endpoints are split into senders (side a) and receivers (side b), and every endpoint has
an interface on every link (dual-homed when there are two bridges, as the MPTCP scenarios
want). Senders play the shipped racks' a1, a2, ... and receivers b1, b2, ... (`plays`), so the
scenarios' role defaults find them without --client/--server. What ctl cannot know is written
as a marked placeholder that `ctl inventory check` refuses on its line until it is filled
(`<management address of snd>`); plausible defaults it can guess (interface names, pipe
numbers, data addresses) carry a `# check:` comment. With every management address given,
the file is accepted as it is.
"""
from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass

from controller.argutil import NAME_PATTERNS
from controller.errors import UsageError

ROLES = ("endpoint", "bridge")
SHAPERS = ("dummynet", "tc", "dnpipe")
_HOST_RE = re.compile(r"(?P<name>[^:@]+)(?::(?P<role>[^@]+))?(?:@(?P<address>.+))?")
_MGMT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")


@dataclass(frozen=True)
class HostSpec:
    name: str
    role: str
    address: str | None


def parse_host(spec: str) -> HostSpec:
    """`NAME[:ROLE][@ADDRESS]`: `snd@192.168.1.10`, `shp:bridge@192.168.1.12`, `rcv`."""
    m = _HOST_RE.fullmatch(spec.strip())
    if not m:
        raise UsageError(f"--hosts: {spec[:40]!r} is not NAME[:ROLE][@ADDRESS] (e.g. snd@192.168.1.10, "
                         "shp:bridge@192.168.1.12)")
    name, role, address = m["name"], (m["role"] or "endpoint"), m["address"]
    if not re.fullmatch(NAME_PATTERNS["name"], name):
        raise UsageError(f"--hosts: host name {name[:40]!r} must be lower-case letters, digits and '-', starting "
                         "with a letter (at most 31)")
    if role not in ROLES:
        raise UsageError(f"--hosts: role {role[:20]!r} of {name}: init writes {' and '.join(ROLES)}s (add routers, "
                         "switches and modem hosts by hand, as in inventory/lab-rack.example.yaml)")
    if address is not None:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            if not _MGMT_NAME.fullmatch(address) or re.fullmatch(r"[0-9.]+", address):
                raise UsageError(f"--hosts: {address[:60]!r} (of {name}) is neither an IP address nor a host "
                                 "name") from None
    return HostSpec(name, role, address)


def _q(text: str) -> str:
    """A YAML scalar (JSON strings are YAML)."""
    return json.dumps(text)


def skeleton(name: str, hosts: list[HostSpec], *, shaper: str = "dummynet", user: str = "root",
             key_file: str = "~/.ssh/id_ed25519", known_hosts: str = "~/.ssh/known_hosts", sudo: bool = False,
             schema: str | None = None) -> str:
    """The inventory text (pure)."""
    if not re.fullmatch(NAME_PATTERNS["name"], name):
        raise UsageError(f"--name: {name[:40]!r} must be lower-case letters, digits and '-', starting with a letter")
    if shaper not in SHAPERS:
        raise UsageError(f"--shaper: one of {', '.join(SHAPERS)}")
    names = [h.name for h in hosts]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"--hosts: {', '.join(dup)} given twice")
    endpoints = [h for h in hosts if h.role == "endpoint"]
    bridges = [h for h in hosts if h.role == "bridge"]
    if not bridges or len(endpoints) < 2:
        raise UsageError("--hosts: at least two endpoints and one bridge (e.g. --hosts snd@ADDR rcv@ADDR "
                         "shp:bridge@ADDR)")
    if len(bridges) > 9:
        raise UsageError("--hosts: at most 9 bridges (one link each)")
    addrs = [h.address for h in hosts if h.address]
    if len(set(a.lower() for a in addrs)) != len(addrs):
        raise UsageError("--hosts: a management address is given twice")
    senders = endpoints[:(len(endpoints) + 1) // 2]
    receivers = endpoints[len(senders):]
    links = [f"path{k}" for k in range(1, len(bridges) + 1)]
    freebsd = shaper == "dummynet"
    ports = ("em0", "em1") if freebsd else ("eth1", "eth2")
    out: list[str] = []
    w = out.append
    if schema:
        w(f"# yaml-language-server: $schema={schema}")
    w(f"# Rack {name}, written by `ctl inventory init`. Fill in every <...> value, check every line marked")
    w("# `check:`, then `ctl inventory check` this file (and `--probe` to ask the hosts).")
    w("# Senders are on side a of each link, receivers on side b; `plays` tells the scenarios which of your")
    w("# hosts stands for their default roles (a1 = first sender, b1 = first receiver, ...).")
    w("version: 1")
    w(f"name: {name}")
    w("kind: physical")
    w(f"description: {_q(f'{len(endpoints)} endpoints, {len(bridges)} bridge' + ('s' if len(bridges) > 1 else ''))}")
    w("")
    w("ssh:")
    w(f"  user: {_q(user)}")
    if sudo:
        w("  sudo: true          # ctl's commands through `sudo -n`: the account needs NOPASSWD: ALL, see "
          "docs/howto/physical-rack.md, \"Reaching the rack as the lab does\"")
    w(f"  key_file: {_q(key_file)}        # check: the key ctl logs in with")
    w(f"  known_hosts: {_q(known_hosts)}  # check: every host's key must be in it")
    w("")
    w("# InfluxDB (optional): uncomment to send every run's telemetry; the token is a reference, never the value.")
    w("# influxdb:")
    w("#   url: http://192.168.1.5:8086")
    w("#   org: lab")
    w("#   bucket: ctl")
    w("#   token: {env: CTL_INFLUX_TOKEN}")
    w("")
    w("hosts:")
    for group, side, label in ((senders, "a", "a"), (receivers, "b", "b")):
        for i, h in enumerate(group, 1):
            w(f"  {h.name}:")
            w("    role: endpoint")
            w(f"    mgmt: {{address: {_q(h.address or f'<management address of {h.name}>')}}}")
            played = f"{label}{i}"
            if played != h.name:
                w(f"    plays: [{played}]")
            w("    interfaces:")
            for k, link in enumerate(links, 1):
                host_no = (10 if side == "a" else 20) + i
                w(f"      - {{name: eth{k}, address: 10.{k}.0.{host_no}/24, link: {link}, side: {side}}}"
                  "   # check: interface name")
    for h in bridges:
        w(f"  {h.name}:")
        w("    role: bridge")
        if freebsd:
            w("    os: freebsd")
        w(f"    mgmt: {{address: {_q(h.address or f'<management address of {h.name}>')}}}")
        if shaper == "dummynet":
            w("    shaper: {kind: dummynet}")
            w("    # facts: {os_release: \"14.1-RELEASE\"}   # optional: what a dry run assumes (else it says what it "
              "assumes)")
        elif shaper == "dnpipe":
            w("    shaper: {kind: dnpipe, binary: /usr/local/bin/dnpipe, control_dir: /run/dnpipe}   # check: path")
        else:
            w("    shaper: {kind: tc}   # Linux tc: rate and queue only (no delay, no loss)")
        w("    interfaces:")
        w(f"      - {{name: {ports[0]}}}   # check: the port facing the senders (side a)")
        w(f"      - {{name: {ports[1]}}}   # check: the port facing the receivers (side b)")
    w("")
    w("links:")
    for k, (link, bridge) in enumerate(zip(links, bridges), 1):
        w(f"  {link}:")
        w(f"    bridge: {bridge.name}")
        w(f"    a_port: {ports[0]}")
        w(f"    b_port: {ports[1]}")
        if shaper == "dummynet":
            w(f"    forward: {{pipe: {10000 + 100 * k + 1}}}   # ipfw pipe numbers ctl uses (within 10000-10999)")
            w(f"    reverse: {{pipe: {10000 + 100 * k + 2}}}")
        w("    capacity: 1G   # check: the line rate of the ports")
    return "\n".join(out) + "\n"
