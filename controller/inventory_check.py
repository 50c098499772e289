"""`ctl inventory check`: every problem of an inventory file at once, each with its line.

Loading an inventory (controller.inventory.load_inventory) stops at the first problem: the
model's cross-references are checked only once every field is valid. This check reports
everything it can find in one pass over the file:

- every field the model refuses (all of pydantic's errors, in ctl's words: controller.modelerrors);
- the rack's cross-references, checked on the file's data even where some fields are invalid:
  addresses valid and unique (management and data), interfaces that name a link or segment the
  file has, links whose bridge, ports, segments, switch and dummynet pipes exist and are not
  shared, segments that form a tree, SSH credentials for every host ctl logs in to, one
  default gateway per host, the names hosts and links `plays` (scenario role defaults) unique;
- then, as a backstop, the model itself: a file this check accepts is one `ctl run` loads.

Warnings do not make a file invalid: a secret reference that does not resolve on this machine
now (its variable unset, its file missing, empty or readable by others), SSH files that do not
exist yet (the virtual rack's are created by `ctl lab up`), a link with nothing attached on a
side. A secret's value is never read into a message: only whether it is there.

Pure but for `secret_warnings`/`file_warnings`, which look at the environment and the files
a reference names (never printing what they hold), and `config_file_errors`, which reads the
OpenSSH configs named (executing nothing). Base layer: the scenarios' needs are
checked one layer up (controller.scenarios.roles).
"""
from __future__ import annotations

import difflib
import ipaddress
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ValidationError

from controller.errors import InventoryError
from controller.inventory import Inventory, SecretRef
from controller.modelerrors import describe_all, field_path, line_of
from controller.yamlload import load_yaml_with_lines

_DOTTED_NUMBERS = re.compile(r"[0-9.]+")


@dataclass(frozen=True)
class Finding:
    """One problem of the file: where (path of keys, line) and what, in ctl's words."""

    loc: tuple
    message: str
    line: int | None = None
    severity: str = "error"          # "error" (the file is invalid) or "warning"

    def render(self, path: Path | str) -> str:
        tag = "warning: " if self.severity == "warning" else ""
        where = f"{path}:{self.line}" if self.line is not None else str(path)
        return f"{where}: {field_path(self.loc) + ': ' if self.loc else ''}{tag}{self.message}"

    def to_json(self) -> dict:
        return {"line": self.line, "field": field_path(self.loc), "message": self.message, "severity": self.severity}


@dataclass
class CheckReport:
    path: Path
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    inventory: Inventory | None = None

    @property
    def valid(self) -> bool:
        return not self.errors and self.inventory is not None

    def to_json(self) -> dict:
        return {"file": str(self.path), "valid": self.valid, "errors": [f.to_json() for f in self.errors],
                "warnings": [f.to_json() for f in self.warnings]}


# ---- reading the raw data tolerantly ---------------------------------------------------------

def _d(x: Any) -> dict:
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list:
    return x if isinstance(x, list) else []


def _s(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def _suggest(name: Any, known: Iterable[str]) -> str:
    known = sorted(known)
    close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6) if isinstance(name, str) else []
    listed = ", ".join(known) if known else "none"
    return f" (did you mean {close[0]}? {listed})" if close else f" ({listed})"


def _address_key(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address.lower().rstrip(".")
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def _iface_ip(iface: dict) -> str | None:
    a = _s(iface.get("address"))
    if a is None:
        return None
    try:
        return str(ipaddress.ip_interface(a).ip)
    except ValueError:
        return None


class _Checker:
    """The cross-reference checks of Inventory._cross, each collecting instead of raising."""

    def __init__(self, data: dict):
        self.data = data
        self.hosts = {k: _d(v) for k, v in _d(data.get("hosts")).items()}
        self.links = {k: _d(v) for k, v in _d(data.get("links")).items()}
        self.segments = {k: _d(v) for k, v in _d(data.get("segments")).items()}
        self.out: list[Finding] = []

    def err(self, loc: tuple, message: str, severity: str = "error") -> None:
        self.out.append(Finding(loc, message, severity=severity))

    def run(self) -> list[Finding]:
        self.kind()
        self.addresses()
        self.interfaces()
        self.link_refs()
        self.tree()
        self.hosts_ssh()
        self.plays()
        self.attached()
        return self.out

    def kind(self) -> None:
        kind = self.data.get("kind")
        if kind == "virtual" and "virtual" not in self.data:
            self.err(("kind",), "a virtual inventory needs a `virtual` section (how `ctl lab up` builds it)")
        if kind == "physical" and self.data.get("virtual") is not None:
            self.err(("virtual",), "a physical inventory has no `virtual` section (or set kind: virtual)")

    def _interfaces(self) -> Iterable[tuple[str, int, dict]]:
        for h, host in self.hosts.items():
            for i, iface in enumerate(_l(host.get("interfaces"))):
                if isinstance(iface, dict):
                    yield h, i, iface

    def addresses(self) -> None:
        """Management addresses that only look like IPv4 addresses; no address twice (as the model)."""
        seen: dict[str, tuple[str, str, bool]] = {}
        uses: list[tuple[tuple, str, str, str, str, bool]] = []
        for h, host in self.hosts.items():
            a = _s(_d(host.get("mgmt")).get("address"))
            if a is None:
                continue
            loc = ("hosts", h, "mgmt", "address")
            if _DOTTED_NUMBERS.fullmatch(a):
                try:
                    ipaddress.IPv4Address(a)
                except ValueError:
                    self.err(loc, f"{a!r} is not an IPv4 address (four numbers 0-255) and, all digits, not a "
                                  "host name either")
                    continue
            uses.append((loc, h, a, f"management address {a}", f"host {h}'s management address", True))
        for h, i, iface in self._interfaces():
            ip = _iface_ip(iface)
            if ip is not None:
                name = iface.get("name")
                uses.append((("hosts", h, "interfaces", i, "address"), h, ip, f"address {ip} of {name}",
                             f"{h} {name}'s", False))
        for loc, host, address, what, whose, mgmt in uses:
            k = _address_key(address)
            if k in seen and (seen[k][0] != host or (not mgmt and not seen[k][2])):
                self.err(loc, f"{what} is also {seen[k][1]}")
            seen.setdefault(k, (host, whose, mgmt))

    def interfaces(self) -> None:
        for h, i, iface in self._interfaces():
            link, seg = iface.get("link"), iface.get("segment")
            if link is not None and link not in self.links:
                self.err(("hosts", h, "interfaces", i, "link"),
                         f"names link {link!r}, which this inventory does not have" + _suggest(link, self.links))
            if seg is not None and seg not in self.segments:
                self.err(("hosts", h, "interfaces", i, "segment"),
                         f"names segment {seg!r}, which this inventory does not have" + _suggest(seg, self.segments))
        for h, host in self.hosts.items():
            gws = [i for i, iface in enumerate(_l(host.get("interfaces"))) if _d(iface).get("gateway")]
            if len(gws) > 1:
                self.err(("hosts", h, "interfaces", gws[1], "gateway"),
                         f"a second interface with a `gateway` (interfaces[{gws[0]}] has one): one default route")

    def link_refs(self) -> None:
        used_ports: dict[tuple[str, str], str] = {}
        pipes: dict[tuple[str, int], str] = {}
        for lname, link in self.links.items():
            loc = ("links", lname)
            bname = link.get("bridge")
            bridge = self.hosts.get(bname) if isinstance(bname, str) else None
            if bname is not None and bridge is None:
                self.err(loc + ("bridge",), f"{bname!r} is not a host of this inventory" +
                         _suggest(bname, [h for h, x in self.hosts.items() if x.get("role") == "bridge"]))
            elif bridge is not None and bridge.get("role") != "bridge":
                self.err(loc + ("bridge",), f"host {bname} is a {bridge.get('role')}, not a bridge")
            ports = {_d(i).get("name") for i in _l((bridge or {}).get("interfaces"))}
            a, b = link.get("a_port"), link.get("b_port")
            if a is not None and a == b:
                self.err(loc + ("b_port",), f"a_port and b_port are both {a!r} (a link joins two ports)")
            for key, port in (("a_port", a), ("b_port", b)):
                if port is None or bridge is None:
                    continue
                if port not in ports:
                    self.err(loc + (key,), f"bridge {bname} has no interface {port!r}" +
                             _suggest(port, [p for p in ports if isinstance(p, str)]))
                    continue
                other = used_ports.get((bname, port))
                if other is not None and other != lname:
                    self.err(loc + (key,), f"port {port} of bridge {bname} is already a port of link {other}")
                used_ports.setdefault((bname, port), lname)
            for key in ("a_segment", "b_segment"):
                seg = link.get(key)
                if seg is not None and seg not in self.segments:
                    self.err(loc + (key,), f"{seg!r} is not a named segment" + _suggest(seg, self.segments))
            sw = link.get("switch")
            if sw is not None and sw not in self.hosts:
                self.err(loc + ("switch",), f"{sw!r} is not a host of this inventory" +
                         _suggest(sw, [h for h, x in self.hosts.items() if x.get("role") == "switch"]))
            kind = _d((bridge or {}).get("shaper")).get("kind")
            fwd, rev = _d(link.get("forward")).get("pipe"), _d(link.get("reverse")).get("pipe")
            if kind == "dummynet":
                for d, p in (("forward", fwd), ("reverse", rev)):
                    if p is None:
                        self.err(loc + (d,), f"a dummynet link needs {d}.pipe (the ipfw pipe number of this "
                                             "direction)")
                if fwd is not None and fwd == rev:
                    self.err(loc + ("reverse", "pipe"), f"forward and reverse share pipe {fwd}: one pipe per "
                                                        "direction")
            for d, p in (("forward", fwd), ("reverse", rev)):
                if isinstance(p, int) and not isinstance(p, bool) and isinstance(bname, str):
                    prev = pipes.get((bname, p))
                    if prev is not None and not prev.startswith(lname + "."):
                        self.err(loc + (d, "pipe"), f"pipe {p} on {bname} is already used by {prev}")
                    pipes.setdefault((bname, p), f"{lname}.{d}")
        for sname, seg in self.segments.items():
            sw = seg.get("switch")
            if sw is not None and (sw not in self.hosts or self.hosts[sw].get("role") != "switch"):
                self.err(("segments", sname, "switch"), f"{sw!r} is not a switch host of this inventory")

    def _segment(self, lname: str, side: str) -> str:
        named = self.links[lname].get(f"{side}_segment")
        return named if isinstance(named, str) else f"{lname}.{side}"

    def tree(self) -> None:
        parent: dict[str, str] = {}

        def root(x: str) -> str:
            while parent.setdefault(x, x) != x:
                x = parent[x]
            return x
        for lname in self.links:
            a, b = self._segment(lname, "a"), self._segment(lname, "b")
            if a == b:
                self.err(("links", lname), f"both sides are segment {a}")
                continue
            ra, rb = root(a), root(b)
            if ra == rb:
                self.err(("links", lname), f"segments {a} and {b} are already joined by other links (segments must "
                                           "form a tree: a loop would circulate frames)")
                continue
            parent[ra] = rb

    def hosts_ssh(self) -> None:
        defaults = _d(self.data.get("ssh"))
        for h, host in self.hosts.items():
            if host.get("role") == "switch":
                continue
            merged = {**defaults, **_d(host.get("ssh"))}
            if merged.get("known_hosts") is None or not (merged.get("key_file") or merged.get("agent")
                                                         or merged.get("config_file")):
                self.err(("hosts", h), "no SSH known_hosts, or no key_file, agent or config_file to log in with "
                                       "(set them under `ssh`, for every host or for this one)")

    def plays(self) -> None:
        """A name in `plays` stands for one host or link: the scenarios' role defaults (a1, path1...)."""
        claimed: dict[str, tuple[str, str]] = {}
        for kind, table in (("hosts", self.hosts), ("links", self.links)):
            for name, obj in table.items():
                for i, played in enumerate(_l(obj.get("plays"))):
                    if not isinstance(played, str):
                        continue
                    loc = (kind, name, "plays", i)
                    prev = claimed.get(played)
                    if prev is not None:
                        self.err(loc, f"{played!r} is already played by {prev[0][:-1]} {prev[1]}: a role default "
                                      "stands for one host or link")
                        continue
                    claimed[played] = (kind, name)
                    if played != name and (played in self.hosts or played in self.links):
                        self.err(loc, f"this rack also has a {'host' if played in self.hosts else 'link'} named "
                                      f"{played}: scenarios defaulting to {played} use {name}", "warning")

    def attached(self) -> None:
        """A link side that nothing reaches (no interface, no other link, no member of its segment)."""
        count: dict[str, int] = {}
        for _h, _i, iface in self._interfaces():
            link, side, seg = iface.get("link"), iface.get("side"), iface.get("segment")
            if isinstance(link, str) and link in self.links and side in ("a", "b"):
                s = self._segment(link, side)
            elif isinstance(seg, str):
                s = seg
            else:
                continue
            count[s] = count.get(s, 0) + 1
        for lname in self.links:
            for side in ("a", "b"):
                s = self._segment(lname, side)
                joined = sum(1 for other in self.links for os_ in ("a", "b")
                             if other != lname and self._segment(other, os_) == s)
                if not count.get(s) and not joined:
                    seg = f" or segment {s}" if s in self.segments else ""
                    self.err(("links", lname), f"nothing is attached on side {side} (no interface names "
                                               f"`link: {lname}, side: {side}`{seg})", "warning")


# ---- what the environment holds (never printed) ----------------------------------------------

def secret_warnings(inv: Inventory, environ: Mapping[str, str]) -> list[Finding]:
    """Secret references that do not resolve here now, and secret files others can read."""
    out: list[Finding] = []

    def walk(obj: Any, loc: tuple) -> Iterable[tuple[tuple, SecretRef]]:
        if isinstance(obj, SecretRef):
            yield loc, obj
        elif isinstance(obj, dict):
            for k, v in obj.items():
                yield from walk(v, loc + (k,))
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                yield from walk(v, loc + (i,))
        elif isinstance(obj, BaseModel):
            for name in type(obj).model_fields:
                yield from walk(getattr(obj, name), loc + (name,))
    uses: dict[str, list[tuple]] = {}
    refs: dict[str, SecretRef] = {}
    for loc, ref in walk(inv, ()):
        uses.setdefault(ref.describe(), []).append(loc)
        refs.setdefault(ref.describe(), ref)
    for key, ref in refs.items():
        loc = uses[key][0]
        also = len(uses[key]) - 1
        more = f" (also named by {also} other field{'s' if also > 1 else ''})" if also else ""
        if ref.env and environ.get(ref.env):
            continue
        problem = None
        if ref.file is not None:
            try:
                st = os.stat(ref.file)
            except OSError as exc:
                problem = f"the file {ref.file}: {exc.strerror or exc}"
            else:
                if not stat.S_ISREG(st.st_mode):
                    problem = f"the file {ref.file} is not a regular file"
                elif st.st_size == 0:
                    problem = f"the file {ref.file} is empty"
                elif st.st_mode & 0o077:
                    out.append(Finding(loc, f"the secret file {ref.file} can be read by others (mode "
                                            f"{stat.S_IMODE(st.st_mode):04o}): chmod 600 it{more}",
                                       severity="warning"))
                    continue
                else:
                    continue
        why = "; ".join(x for x in (f"${ref.env} is not set" if ref.env else "", problem or "") if x)
        lab = " (`ctl lab up` creates the virtual rack's secrets)" if inv.kind == "virtual" else ""
        out.append(Finding(loc, f"secret not available on this machine now ({why}): a run needs it{lab}{more}",
                           severity="warning"))
    return out


def file_warnings(inv: Inventory) -> list[Finding]:
    """SSH files the inventory names that do not exist (yet)."""
    out: list[Finding] = []
    seen: set[tuple] = set()
    for loc_base, ssh in [(("ssh",), inv.ssh)] + [(("hosts", h, "ssh"), host.ssh) for h, host in inv.hosts.items()
                                                 if host.ssh is not None]:
        for name in ("key_file", "known_hosts", "config_file"):
            p = getattr(ssh, name)
            if p is None or (name, str(p)) in seen or name not in ssh.model_fields_set and loc_base != ("ssh",):
                continue
            seen.add((name, str(p)))
            if not Path(p).exists():
                extra = " (`ctl lab up` creates it)" if inv.kind == "virtual" else ""
                out.append(Finding(loc_base + (name,), f"{p} does not exist{extra}", severity="warning"))
    return out


def config_file_errors(inv: Inventory) -> list[Finding]:
    """OpenSSH configs the inventory names, read and checked as a connection would read them
    (controller.sshconfig: every line of the file and of what it includes; nothing executed), so
    a refused directive (`Match exec`, `ProxyCommand`, ...) is an error of the check, not a
    surprise at the first connection. A config that does not exist yet is file_warnings' case."""
    from controller.errors import CtlError
    from controller.sshconfig import load_openssh_config

    out: list[Finding] = []
    seen: set[str] = set()
    for loc_base, ssh in [(("ssh",), inv.ssh)] + [(("hosts", h, "ssh"), host.ssh) for h, host in inv.hosts.items()
                                                 if host.ssh is not None]:
        p = ssh.config_file
        if p is None or str(p) in seen or "config_file" not in ssh.model_fields_set and loc_base != ("ssh",):
            continue
        seen.add(str(p))
        if not Path(p).exists():
            continue
        secrets = [ssh.key_passphrase.env] if ssh.key_passphrase is not None and ssh.key_passphrase.env else []
        try:
            load_openssh_config(Path(p), secrets)
        except CtlError as exc:
            out.append(Finding(loc_base + ("config_file",), exc.one_line()))
    return out


# ---- the whole check -------------------------------------------------------------------------

def check_data(data: Any, lines: Mapping[tuple, int], environ: Mapping[str, str] | None = None) -> CheckReport:
    """Every problem of an inventory's data (pure but for the secret and file warnings)."""
    report = CheckReport(Path("-"))
    if not isinstance(data, dict):
        report.errors.append(Finding((), "an inventory is a mapping (version, name, kind, hosts, links...)", 1))
        return report
    structural: list[Finding] = []
    cross_error: str | None = None
    inv: Inventory | None = None
    try:
        inv = Inventory.model_validate(data)
    except ValidationError as exc:
        for loc, msg in describe_all(exc, Inventory):
            if loc == ():
                cross_error = msg      # the model's cross-reference check (it ran: every field was valid)
            else:
                structural.append(Finding(loc, msg))
    semantic = _Checker(data).run()
    found = structural + [f for f in semantic if f.severity == "error"]
    if cross_error is not None and not found:
        found.append(Finding((), cross_error))   # the backstop: what the model refuses, this check never accepts
    report.errors = _placed(found, lines)
    report.warnings = _placed([f for f in semantic if f.severity == "warning"], lines)
    if not report.errors and inv is not None:
        report.errors = _placed(config_file_errors(inv), lines)
    if not report.errors and inv is not None:
        report.inventory = inv
        env = os.environ if environ is None else environ
        report.warnings += _placed(secret_warnings(inv, env) + file_warnings(inv), lines)
    return report


def _placed(findings: list[Finding], lines: Mapping[tuple, int]) -> list[Finding]:
    out: list[Finding] = []
    for f in findings:
        f = Finding(f.loc, f.message, line_of(f.loc, lines), f.severity)
        if f not in out:
            out.append(f)
    return sorted(out, key=lambda f: (f.line if f.line is not None else 0))


def check_file(path: Path, environ: Mapping[str, str] | None = None) -> CheckReport:
    """Load and check one inventory file; a file that is not YAML ctl reads is one error. A
    duplicate key is an error too, and the rest of the file is checked all the same."""
    duplicates: list[tuple[int, tuple, str]] = []
    try:
        data, lines = load_yaml_with_lines(path, duplicates)
    except InventoryError as exc:
        text = exc.one_line()
        m = re.match(rf"{re.escape(str(path))}:(\d+): ", text)
        loc_line = int(m.group(1)) if m else None
        report = CheckReport(path, errors=[Finding((), text[m.end():] if m else text.removeprefix(f"{path}: "),
                                                   loc_line)])
        return report
    report = check_data(data, lines, environ)
    report.path = path
    if duplicates:
        report.inventory = None
        report.errors = sorted(report.errors + [Finding(loc[:-1], message, line) for line, loc, message in duplicates],
                               key=lambda f: (f.line if f.line is not None else 0))
    if report.inventory is not None:
        report.inventory._source = path
    return report
