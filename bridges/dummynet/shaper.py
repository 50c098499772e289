"""Dummynet shaper back-end for FreeBSD transparent bridges (if_bridge + ipfw layer 2).

One pipe per link direction, one ipfw rule per direction that sends the bridge's
layer-2 frames into it:

    forward (a -> b): ipfw add R set 0 pipe P ip from any to any layer2 out recv A xmit B // ctl:LINK:forward
    reverse (b -> a): ipfw add R set 0 pipe P ip from any to any layer2 out recv B xmit A // ctl:LINK:reverse

Why this form (sources: sys/net/if_bridge.c bridge_pfil(), sys/netpfil/ipfw/ip_fw_pfil.c,
ip_dn_io.c; details and the sysctls in firmware-notes/dummynet.md):

- if_bridge hands a bridged frame to ipfw's layer-2 hook ONLY on the output side, once
  per egress member (`dir == PFIL_OUT && ifp != NULL`), when net.link.bridge.ipfw=1 and
  ipfw is attached to the link pfil head (net.link.ether.ipfw=1). There is no layer-2
  input pass for bridged frames (ether_demux() only sees frames for the host itself), so
  `layer2 in recv A` never matches bridged traffic.
- On that output pass the receive interface is still known (`recv` tests the mbuf's
  rcvif on either direction; `xmit` only on output). `recv A xmit B` selects exactly the
  frames crossing the bridge from A to B: not frames the host sends itself (no rcvif),
  not the other direction, not other bridges' ports.
- `layer2` keeps the rule off the layer-3 passes (pfil_member / pfil_bridge hooks, which
  net.link.bridge.ipfw=1 turns off anyway), so a packet can never meet the rule twice on
  its way through: shaped exactly once per direction.
- Dummynet re-injects the delayed frame with ether_output_frame(), which runs the
  layer-2 hook again carrying the rule tag: with net.inet.ip.fw.one_pass=1 it passes at
  once; with one_pass=0 the scan resumes AFTER our rule, where no other ctl rule matches
  (each matches one egress port). A second rule (anywhere) sending the same frames to a
  pipe would shape twice with one_pass=0: verify() reports more than one rule per pipe.

Scope: ctl touches only rule numbers in the inventory's `rule_range` and pipe numbers in
`pipe_range`; every command builder asserts it. `ipfw -S list` is read whole and filtered
here (the range form fails with exit 69 when the range is empty).

All planning, verification and parsing is pure; the I/O loop is bridges.base.apply/restore.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from bridges.base import (
    Capabilities,
    CounterStream,
    Direction,
    PipeConfig,
    PipeKey,
    ShaperBase,
    ShaperState,
    check_capabilities,
    register,
)
from bridges.dummynet.rules import (
    TERMINATING,
    canonical_rule,
    listing_stream,
    pipe_counters,
    pipe_signature,
    rule_pipe,
    rules_by_number,
)
from bridges.dummynet.values import (
    ASSUMED_RULES,
    BURST_MAX_EXACT,
    BW_MAX_INT,
    BW_MAX_UINT,
    BW_UINT_SINCE_MAJOR,
    DEFAULT_BYTE_LIMIT,
    DEFAULT_SLOT_LIMIT,
    DELAY_MAX_MS,
    DN_MAX_ID,
    DNCTL_SINCE_MAJOR,
    KB_PRINT_FROM,
    MIN_QUEUE_BYTES,
    PLR_MIN,
    QUEUE_LIMIT_NAMES,
    SAMPLER_SCRIPT,
    SYSCTL_NAMES,
    assumed_release, assumed_sysctl_text, dry_run_assumptions,
    format_bw_arg,
    format_delay_arg,
    format_plr_arg,
    format_queue_arg,
    pipe_show_block,
    plr_conversion,
    printed_bw,
    printed_plr,
    printed_queue,
    red_args, red_of, restore_red_args, listed_red,
)
from bridges.ipfw_host import IpfwRule, parse_freebsd_version, parse_ipfw_list, parse_sysctl
from bridges.dummynet.listing import MODERN, HostSnapshot, read_pipes
from bridges.ipfw_records import DnListing, DnObject
from controller.commands import Command, CommandResult
from controller.errors import InventoryError, ParameterError, ParseError, UnsupportedShaping
from controller.inventory import DummynetShaper as DummynetSpec
from controller.inventory import Inventory, Link, Role
from controller.units import Conversion, Queue, format_delay, format_probability, format_rate

@dataclass(frozen=True)
class _KeyState:
    pipe: DnObject | None
    rules: tuple[IpfwRule, ...]            # enabled rules in range with our exact form for the key
    disabled_rules: tuple[IpfwRule, ...]   # same form, but in a disabled set
    pipe_rules: tuple[IpfwRule, ...]       # every enabled rule in range whose action is `pipe N`


@register("dummynet")
class DummynetShaper(ShaperBase):
    """The dummynet back-end bound to one FreeBSD bridge host of an inventory.

    Construct with `DummynetShaper(inventory, host_name)`; the links whose `bridge` is this
    host are the ones it shapes, each direction in its own pipe (`forward.pipe`,
    `reverse.pipe`) fed by its own layer-2 rule. Rule numbers are allocated in the
    inventory's `rule_range` from its low end: for the host's links sorted by name,
    forward then reverse (path1: 10000, 10001; path2: 10002, ...).
    """

    kind: ClassVar[str]

    def __init__(self, inventory: Inventory, host_name: str):
        if host_name not in inventory.hosts:
            raise InventoryError(f"dummynet: no host {host_name!r} in inventory {inventory.name}")
        host = inventory.hosts[host_name]
        if host.role is not Role.BRIDGE or not isinstance(host.shaper, DummynetSpec):
            raise InventoryError(f"dummynet: host {host_name} is not a bridge with a dummynet shaper")
        self.host = host_name
        self.spec: DummynetSpec = host.shaper
        self.facts: dict[str, str] = dict(host.facts)
        self.links: dict[str, Link] = {n: l for n, l in sorted(inventory.links.items()) if l.bridge == host_name}
        self.pipe_of: dict[PipeKey, int] = {}
        self.rule_of: dict[PipeKey, int] = {}
        lo_p, hi_p = self.spec.pipe_range
        lo_r, hi_r = self.spec.rule_range
        n = 0
        for name, link in self.links.items():
            for d in (Direction.FORWARD, Direction.REVERSE):
                pipe = getattr(link, d.value).pipe
                if pipe is None or not lo_p <= pipe <= hi_p:
                    raise InventoryError(f"dummynet: {host_name} link {name} {d.value}.pipe {pipe} is outside "
                                         f"pipe_range {lo_p}-{hi_p}")
                self.pipe_of[(name, d)] = pipe
                if lo_r + n > hi_r:
                    raise InventoryError(f"dummynet: {host_name} rule_range {lo_r}-{hi_r} is too small for "
                                         f"{2 * len(self.links)} rules")
                self.rule_of[(name, d)] = lo_r + n
                n += 1
        self.key_of_pipe: dict[int, PipeKey] = {p: k for k, p in self.pipe_of.items()}

    # ---- small helpers ------------------------------------------------------------------------

    def _label(self, key: PipeKey) -> str:
        return f"{self.host} (dummynet) link {key[0]} {key[1].value} pipe {self.pipe_of[key]}"

    def _ports(self, key: PipeKey) -> tuple[str, str]:
        """(ingress, egress) member ports of a direction."""
        link = self.links[key[0]]
        return (link.a_port, link.b_port) if key[1] is Direction.FORWARD else (link.b_port, link.a_port)

    def _in_pipe_range(self, n: int) -> bool:
        return self.spec.pipe_range[0] <= n <= self.spec.pipe_range[1]

    def _in_rule_range(self, n: int) -> bool:
        return self.spec.rule_range[0] <= n <= self.spec.rule_range[1]

    @staticmethod
    def _bw_max(major: int | None) -> int:
        return BW_MAX_UINT if major is not None and major >= BW_UINT_SINCE_MAJOR else BW_MAX_INT

    def rule_body(self, key: PipeKey) -> tuple[str, ...]:
        """The rule body (after `set 0`) that feeds a direction's pipe; see the module docstring."""
        ingress, egress = self._ports(key)
        return ("pipe", str(self.pipe_of[key]), "ip", "from", "any", "to", "any", "layer2", "out",
                "recv", ingress, "xmit", egress, "//", f"ctl:{key[0]}:{key[1].value}")

    def _read_tool(self) -> str:
        # ipfw is needed for the rules anyway and `ipfw pipe show` == `dnctl pipe show` (same
        # binary, same kernel); a forced `tool: dnctl` is honoured for reads too.
        return "dnctl" if self.spec.tool == "dnctl" else "ipfw"

    def tool_for(self, major: int | None) -> str:
        """`ipfw` or `dnctl` for pipe configuration: forced by the inventory, else by release."""
        if self.spec.tool != "auto":
            return self.spec.tool
        if major is None:
            raise UnsupportedShaping(f"{self.host} (dummynet): FreeBSD release unknown (freebsd-version -u "
                                     "printed nothing usable; in a dry run set facts.os_release) and "
                                     "shaper.tool is auto: set tool: ipfw or tool: dnctl")
        return "dnctl" if major >= DNCTL_SINCE_MAJOR else "ipfw"

    # ---- Shaper protocol ----------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        """Rate, delay, loss, slot and byte queues; no masks/scheduler types (see validate)."""
        # max_bw_bps is dummynet's best case (UINT_MAX bit/s); plan() applies the limit of the
        # release it reads from the host (2^31-1 before FreeBSD 13).
        return Capabilities(rate=True, delay=True, loss=True, queue_slots=True, queue_bytes=True,
                            max_bw_bps=BW_MAX_UINT, max_delay_us=DELAY_MAX_MS * 1000, masks=False, red=True)

    def validate(self, desired: Mapping[PipeKey, PipeConfig]) -> None:
        """Refuse, before anything is read or sent, what dummynet cannot do exactly.

        Host-dependent limits (pipe_slot_limit, pipe_byte_limit, kern.hz ticks, the bw
        maximum of the release) are checked by plan() on the values read from the host,
        which is still before any command that changes anything.
        """
        for key, p in desired.items():
            if key not in self.pipe_of:
                raise ParameterError(f"{self.host} (dummynet): link {key[0]} {key[1].value} is not carried by "
                                     f"this bridge (its links: {', '.join(self.links) or 'none'})")
            if p.mask or p.sched:
                raise UnsupportedShaping(
                    f"{self._label(key)}: per-flow masks and scheduler types are not supported by ctl's dummynet "
                    "driver (its `pipe` rules feed the pipe's internal FIFO; a mask would give every flow its own "
                    "copy of the link)")
        check_capabilities(self.kind, self.capabilities(), self.host, desired)
        # Only what holds on every FreeBSD here; the host's own limits (release, sysctls,
        # kern.hz) are checked by plan() on the values read from it -- Host.facts in a dry run.
        static = {"slot_limit": None, "byte_limit": None, "hz": None, "bw_max": BW_MAX_UINT}
        for key, p in desired.items():
            self._check_pipe(key, p, static)

    def _limits_from(self, sysctl: Mapping[str, str], major: int | None) -> dict[str, int | None]:
        def num(name: str, default: int | None) -> int | None:
            v = sysctl.get(name)
            if v is None:
                return default
            try:
                return int(v)
            except ValueError:
                raise ParseError(f"{self.host}: {name} = {v!r} is not an integer") from None
        # An unreadable limit is taken as ipfw itself takes it (sysctlbyname() failing -> default).
        return {"slot_limit": num("net.inet.ip.dummynet.pipe_slot_limit", DEFAULT_SLOT_LIMIT),
                "byte_limit": num("net.inet.ip.dummynet.pipe_byte_limit", DEFAULT_BYTE_LIMIT),
                "hz": num("kern.hz", None),
                "bw_max": self._bw_max(major)}

    def _check_pipe(self, key: PipeKey, p: PipeConfig, limits: Mapping[str, int | None]) -> None:
        where = self._label(key)
        bw_max = limits["bw_max"] or BW_MAX_INT
        if p.bw_bps is not None and p.bw_bps > bw_max:
            raise ParameterError(f"{where}: bw {format_rate(p.bw_bps)} is above dummynet's maximum "
                                 f"{bw_max} bit/s on this release (\"bandwidth too large\")")
        if p.delay_us % 1000:
            raise ParameterError(f"{where}: delay {format_delay(p.delay_us)} is finer than 1 ms; dummynet delays "
                                 "are whole milliseconds (rounded to kernel ticks)")
        if p.delay_us > DELAY_MAX_MS * 1000:
            raise ParameterError(f"{where}: delay {format_delay(p.delay_us)} is above dummynet's "
                                 f"{DELAY_MAX_MS} ms (\"delay must be < 10000\")")
        hz = limits.get("hz")
        if hz and p.delay_us and (p.delay_us // 1000 * hz) % 1000:
            raise ParameterError(f"{where}: delay {format_delay(p.delay_us)} is not a whole number of ticks at "
                                 f"kern.hz={hz} (tick {1000 / hz:g} ms); dummynet would truncate it. "
                                 "Use kern.hz=1000 on the bridge (firmware-notes/dummynet.md)")
        if p.plr and p.plr < PLR_MIN:
            raise ParameterError(f"{where}: loss {format_probability(p.plr)} is below 1e-6 (0.0001 %): `ipfw pipe "
                                 "show` prints it (plr) with 6 decimals, so ctl could not verify it")
        q = p.queue
        slot_limit, byte_limit = limits.get("slot_limit"), limits.get("byte_limit")
        if q.slots is not None and slot_limit is not None and q.slots > slot_limit:
            raise ParameterError(f"{where}: queue {q.slots} slots is above net.inet.ip.dummynet.pipe_slot_limit="
                                 f"{slot_limit} (ipfw: \"2 <= queue size <= {slot_limit}\"); raise the sysctl "
                                 "on the bridge or use a smaller queue")
        if q.bytes is not None:
            if q.bytes < MIN_QUEUE_BYTES:
                raise ParameterError(f"{where}: queue {q.bytes} B is below {MIN_QUEUE_BYTES} B; the kernel "
                                     "would silently use 16384 B instead")
            if byte_limit is not None and q.bytes > byte_limit:
                raise ParameterError(f"{where}: queue {q.bytes} B is above net.inet.ip.dummynet.pipe_byte_limit="
                                     f"{byte_limit} (ipfw: \"queue size must be < {byte_limit}B\")")
            if q.bytes >= KB_PRINT_FROM and q.bytes % 1024:
                raise ParameterError(f"{where}: queue {q.bytes} B is not a whole number of KiB; `pipe show` "
                                     f"prints byte queues from {KB_PRINT_FROM} B on in whole KiB, so ctl could "
                                     "not verify it (use a multiple of 1024)")
        if p.burst_bytes is not None and not 0 <= p.burst_bytes <= BURST_MAX_EXACT:
            raise ParameterError(f"{where}: burst {p.burst_bytes} B: ctl supports 0..{BURST_MAX_EXACT} B (larger "
                                 "bursts are printed rounded and could not be verified)")

    # ---- reading ------------------------------------------------------------------------------

    def dry_run_assumptions(self) -> list[str]:
        return dry_run_assumptions(self.host, self.facts, self.spec.tool)

    def read_commands(self) -> list[Command]:
        """Release, sysctls, the whole pipe listing and the whole rule list (all read-only)."""
        rel = assumed_release(self.facts, self.spec.tool)
        return [
            Command(("freebsd-version", "-u"), check=False, assume=rel + "\n" if rel else "",
                    note="userland release: ipfw or dnctl, bw limit (none before FreeBSD 10: set shaper.tool)"),
            Command(("sysctl",) + SYSCTL_NAMES, check=False,
                    note="dummynet limits, kern.hz, bridge/ipfw layer-2 switches (unknown oids exit 1)",
                    assume=assumed_sysctl_text(self.facts, SYSCTL_NAMES)),
            Command((self._read_tool(), "pipe", "show"), note="all dummynet pipes", assume=""),
            Command(("ipfw", "-S", "list"), note="all rules with their sets (ctl's range is filtered here)",
                    assume=ASSUMED_RULES),
        ]

    def parse_state(self, results: list[CommandResult]) -> ShaperState:
        """Turn the outputs of read_commands() into a ShaperState (pure)."""
        cmds = self.read_commands()
        if len(results) != len(cmds) or any(tuple(r.argv) != c.argv for r, c in zip(results, cmds)):
            raise ParseError(f"{self.host} (dummynet): results do not match read_commands()")
        raw = {c.text(): r.stdout for c, r in zip(cmds, results)}
        sysctl_err = results[1].stderr.strip()
        if sysctl_err:
            raw[cmds[1].text() + " (stderr)"] = results[1].stderr
        state = ShaperState(pipes={}, raw=raw)
        snap = self.snapshot(state)
        state.pipes = {key: self._observed_config(st) for key, st in self._key_states(snap).items()}
        state.counters = pipe_counters(_listing_of(snap), self.key_of_pipe)
        state.details = self._details(snap)
        return state

    def snapshot(self, state: ShaperState) -> HostSnapshot:
        """Re-parse a ShaperState's raw outputs (also works on a state loaded from a run record)."""
        cmds = self.read_commands()
        try:
            ver_text, pipes_text, rules_text = (state.raw[cmds[i].text()] for i in (0, 2, 3))
            sysctl_text = state.raw[cmds[1].text()]
        except KeyError as exc:
            raise ParseError(f"{self.host} (dummynet): state lacks the output of {exc.args[0]!r}") from None
        os_release = major = None
        if ver_text.strip():
            os_release, major, _ = parse_freebsd_version(ver_text)
        try:
            pipes = read_pipes(pipes_text)
        except ParseError as exc:       # e.g. a number out of range: this host's listing, said so
            raise ParseError(f"{self.host} (dummynet): {exc}") from None
        return HostSnapshot(os_release=os_release, major=major, sysctl=parse_sysctl(sysctl_text),
                            pipes=pipes.listing.by_number(), rules=parse_ipfw_list(rules_text),
                            sysctl_stderr=state.raw.get(cmds[1].text() + " (stderr)", ""),
                            listing_format=pipes.format, queues_on=pipes.queues_on)

    def _rules_in_range(self, snap: HostSnapshot) -> list[IpfwRule]:
        return [r for r in snap.rules if self._in_rule_range(r.number)]

    def _key_states(self, snap: HostSnapshot) -> dict[PipeKey, _KeyState]:
        in_range = self._rules_in_range(snap)
        out = {}
        for key, pipe in self.pipe_of.items():
            want = canonical_rule(self.rule_body(key))
            same = [r for r in in_range if canonical_rule(r.tokens) == want]
            pipe_rules = tuple(r for r in in_range if not r.disabled and rule_pipe(r.tokens) == pipe)
            out[key] = _KeyState(pipe=snap.pipes.get(pipe), rules=tuple(r for r in same if not r.disabled),
                                 disabled_rules=tuple(r for r in same if r.disabled), pipe_rules=pipe_rules)
        return out

    @staticmethod
    def _config_of(obj: DnObject) -> PipeConfig:
        link, fs = obj.link, obj.flowset
        assert link is not None
        if fs is None:
            raise ParseError(f"pipe {link.number}: listing has no flowset line (queue and plr unknown)")
        queue = Queue(slots=fs.queue_slots) if fs.queue_slots is not None else Queue(bytes=fs.queue_bytes)
        return PipeConfig(bw_bps=link.bw_bps, delay_us=link.delay_ms * 1000, plr=fs.plr, queue=queue,
                          burst_bytes=link.burst_bytes or None, red=red_of(fs.red))

    def _observed_config(self, st: _KeyState) -> PipeConfig | None:
        # Shaped means: our rule sends the direction's frames to an existing pipe.
        if st.pipe is None or not st.rules:
            return None
        return self._config_of(st.pipe)

    def _extras(self, obj: DnObject) -> list[str]:
        """Features of an existing pipe that ctl neither plans nor can restore exactly."""
        n = obj.number
        out = []
        fs, link = obj.flowset, obj.link
        if fs is None:
            return ["no flowset line"]
        if fs.qm not in ("droptail", "RED", "GRED"):
            out.append(f"queue management {fs.qm}")
        if obj.profile is not None:
            out.append(f"delay profile {obj.profile.name!r}")
        if obj.flowset_mask is not None or obj.sched_mask is not None:
            out.append("a flow mask")
        if obj.sched is not None and obj.sched.type != "FIFO":
            out.append(f"scheduler {obj.sched.type}")
        if fs.fs_nr != n + 2 * DN_MAX_ID or fs.sched_nr != n + DN_MAX_ID:
            out.append(f"unexpected flowset q{fs.fs_nr} / sched {fs.sched_nr}")
        if link is not None and not link.burst_exact:
            out.append(f"burst {link.burst_text} (printed rounded)")
        # A byte queue printed "N KB" is taken as N KiB, which is what any `queue NKbytes` sets;
        # only a `queue NB` of 8 KiB or more that was not a whole KiB would differ (by < 1 KiB).
        return out

    def _details(self, snap: HostSnapshot) -> dict[str, Any]:
        pipes_in_range = {str(n): o.to_json() for n, o in sorted(snap.pipes.items()) if self._in_pipe_range(n)}
        return {
            "os_release": snap.os_release,
            "listing_format": snap.listing_format,      # modern (FreeBSD >= 8) or classic (see listing.py)
            "tool": self.tool_for(snap.major) if (snap.major is not None or self.spec.tool != "auto") else None,
            "sysctl": dict(snap.sysctl),
            "rule_range": list(self.spec.rule_range),
            "pipe_range": list(self.spec.pipe_range),
            "rules_in_range": [r.render() for r in self._rules_in_range(snap)],
            "pipes_in_range": pipes_in_range,
            "rule_of": {f"{k[0]}.{k[1].value}": v for k, v in self.rule_of.items()},
            "pipe_of": {f"{k[0]}.{k[1].value}": v for k, v in self.pipe_of.items()},
            "warnings": self.host_warnings(snap),
        }

    # ---- host checks --------------------------------------------------------------------------

    def host_problems(self, snap: HostSnapshot) -> list[str]:
        """Host settings under which ctl's rules would shape nothing (or twice): refused by plan()."""
        s = snap.sysctl
        out = []
        if s.get("net.link.bridge.ipfw") != "1":
            out.append(f"net.link.bridge.ipfw is {s.get('net.link.bridge.ipfw', 'missing (if_bridge not loaded?)')}: "
                       "if_bridge never hands bridged frames to ipfw's layer-2 rules, nothing would be shaped")
        if s.get("net.link.ether.ipfw") != "1":
            out.append(f"net.link.ether.ipfw is {s.get('net.link.ether.ipfw', 'missing (ipfw not loaded?)')}: "
                       "ipfw is not attached to the layer-2 hook, nothing would be shaped")
        if "net.inet.ip.dummynet.pipe_slot_limit" not in s:
            out.append("net.inet.ip.dummynet.* missing: dummynet is not loaded (kldload dummynet)")
        return out

    def host_warnings(self, snap: HostSnapshot) -> list[str]:
        """Settings that change results without making them wrong per se: recorded with the state."""
        s = snap.sysctl
        out = []
        if s.get("net.inet.ip.fw.one_pass", "1") != "1":
            out.append("net.inet.ip.fw.one_pass=0: after its pipe a frame continues down the rule list; a later "
                       "rule outside ctl's range could shape it again")
        if s.get("net.inet.ip.dummynet.io_fast", "0") != "0":
            out.append("net.inet.ip.dummynet.io_fast=1: an idle pipe starts with one tick of credit "
                       "(bw/kern.hz bits), the first packets after idle skip serialization")
        hz = s.get("kern.hz")
        if hz is not None and hz != "1000":
            out.append(f"kern.hz={hz}: delays are multiples of {1000 / int(hz):g} ms (truncated)")
        for pipe, queues in sorted(snap.queues_on.items()):
            if pipe in self.pipe_of.values():
                out.append(f"pipe {pipe} is fed by WF2Q+ queue(s) {', '.join(map(str, queues))} too: traffic "
                           "outside ctl's rules shares its bandwidth")
        lo = self.spec.rule_range[0]
        ports = {p for link in self.links.values() for p in (link.a_port, link.b_port)}
        for r in snap.rules:
            if r.number >= lo or r.disabled or not self._may_preempt(r, ports):
                continue
            out.append(f"rule {r.number} ({r.body}) comes before ctl's range and may take bridged frames before "
                       "ctl's pipe rules see them")
        return out

    @staticmethod
    def _may_preempt(rule: IpfwRule, ports: set[str]) -> bool:
        """Conservative: a terminating `ip from any to any` rule whose options cannot exclude the
        layer-2 output pass of our ports. Rules with other options are not flagged."""
        toks = list(rule.tokens)
        if "//" in toks:
            toks = toks[:toks.index("//")]
        if toks and toks[0] == "prob":
            return False
        if not toks or toks[0] not in TERMINATING:
            return False
        try:
            f = toks.index("from")
        except ValueError:
            return False
        if toks[f - 1] not in ("ip", "all") or toks[f:f + 4] != ["from", "any", "to", "any"]:
            return False
        opts = toks[f + 4:]
        j = 0
        while j < len(opts):
            o = opts[j]
            if o in ("layer2", "out", "bridged"):
                j += 1
            elif o in ("recv", "xmit", "via") and j + 1 < len(opts):
                if opts[j + 1] not in ports and opts[j + 1] != "any":
                    return False
                j += 2
            else:
                return False
        return True

    def _check_foreign_rules(self, snap: HostSnapshot) -> None:
        ours = set(self.pipe_of.values())
        for r in snap.rules:
            if self._in_rule_range(r.number):
                continue
            target = rule_pipe(r.tokens)
            if target in ours:
                raise UnsupportedShaping(f"{self.host} (dummynet): rule {r.number} outside ctl's rule_range "
                                         f"{self.spec.rule_range[0]}-{self.spec.rule_range[1]} sends traffic to pipe "
                                         f"{target}, which ctl would reconfigure: {r.render()!r}")

    # ---- planning -----------------------------------------------------------------------------

    def _pipe_cmd(self, tool: str, number: int, *args: str, note: str = "") -> Command:
        assert self._in_pipe_range(number), f"pipe {number} outside pipe_range"
        return Command((tool, "pipe", str(number)) + args, mutates=True, note=note)

    def _rule_add(self, number: int, set_no: int, body: Sequence[str], note: str = "") -> Command:
        assert self._in_rule_range(number), f"rule {number} outside rule_range"
        return Command(("ipfw", "add", str(number), "set", str(set_no)) + tuple(body), mutates=True, note=note)

    def _rule_delete(self, number: int, note: str = "") -> Command:
        assert self._in_rule_range(number), f"rule {number} outside rule_range"
        return Command(("ipfw", "delete", str(number)), mutates=True, note=note)

    def config_args(self, p: PipeConfig) -> tuple[str, ...]:
        """`config ...` arguments for a PipeConfig: every parameter explicit (a `pipe N config`
        resets the ones it does not name)."""
        args: tuple[str, ...] = ("config", "bw", format_bw_arg(p.bw_bps), "delay", format_delay_arg(p.delay_us),
                "plr", format_plr_arg(p.plr), "queue", format_queue_arg(p.queue), *red_args(p.red))
        return args + (("burst", str(p.burst_bytes)) if p.burst_bytes else ())

    def _printed_diffs(self, want: PipeConfig, obj: DnObject, label: str, gbit: bool) -> list[str]:
        """Field differences between a planned config and a listed pipe, compared as printed."""
        link, fs = obj.link, obj.flowset
        assert link is not None
        out = []
        if fs is None:
            return [f"{label}: listing has no flowset line"]
        got_bw = "unlimited" if link.unlimited else printed_bw(link.bw_bps, gbit)
        if printed_bw(want.bw_bps, gbit) != got_bw:
            out.append(f"{label}: bw expected {printed_bw(want.bw_bps, gbit)}, found {link.bw_printed}")
        if want.delay_us // 1000 != link.delay_ms:
            out.append(f"{label}: delay expected {want.delay_us // 1000} ms, found {link.delay_ms} ms")
        if printed_plr(want.plr) != fs.plr_text:
            shown_want, shown_got = printed_plr(want.plr) or "0, not printed", fs.plr_text or "0, not printed"
            out.append(f"{label}: loss expected {format_probability(want.plr)} (plr {shown_want}), "
                       f"found {format_probability(fs.plr)} (plr {shown_got})")
        if printed_queue(want.queue) != fs.queue_text:
            out.append(f"{label}: queue expected {printed_queue(want.queue)}, found {fs.queue_text}")
        if (listed_red(want.red).render() if want.red else None) != (fs.red.render() if fs.red else None):
            out.append(f"{label}: red expected {want.red or 'drop-tail'}, found {fs.red.render().strip() if fs.red else fs.qm}")
        if (want.burst_bytes or 0) != link.burst_bytes or not link.burst_exact:
            out.append(f"{label}: burst expected {want.burst_bytes or 0}, found {link.burst_text}")
        for extra in self._extras(obj):
            out.append(f"{label}: unplanned {extra}")
        return out

    def plan(self, desired: Mapping[PipeKey, PipeConfig], observed: ShaperState) -> list[Command]:
        """Commands taking the bridge from `observed` to `desired` (pure).

        Refuses (before anything is sent) host settings under which nothing would be shaped,
        queues above the limits read from the host, delays that are not whole ticks, rules
        outside the range that use ctl's pipes, and reconfiguring an existing pipe whose
        features ctl could not restore. Order: stale rules in the range are deleted, pipes
        configured, then the rules added, so no rule ever points at a missing pipe.
        """
        self.validate(desired)
        snap = self.snapshot(observed)
        problems = self.host_problems(snap)
        if problems:
            raise UnsupportedShaping(f"{self.host} (dummynet): bridge not tuned for layer-2 shaping: "
                                     + "; ".join(problems) + " (see firmware-notes/dummynet.md)")
        tool = self.tool_for(snap.major)
        limits = self._limits_from(snap.sysctl, snap.major)
        for key, p in desired.items():
            self._check_pipe(key, p, limits)
        self._check_foreign_rules(snap)
        gbit = _prints_gbit(snap)

        # rules: the range must hold exactly the desired rules
        target: dict[int, list[tuple[int, tuple[str, ...]]]] = defaultdict(list)
        for key in sorted(desired, key=_key_order):
            target[self.rule_of[key]].append((0, self.rule_body(key)))
        current: dict[int, list[IpfwRule]] = defaultdict(list)
        for r in self._rules_in_range(snap):
            current[r.number].append(r)
        changed = []
        for n in sorted(set(target) | set(current)):
            want_rules = [(s, canonical_rule(b)) for s, b in target.get(n, [])]
            have_rules = [(r.set, canonical_rule(r.tokens)) for r in current.get(n, []) if not r.disabled]
            if want_rules != have_rules or any(r.disabled for r in current.get(n, [])):
                changed.append(n)

        cmds = [self._rule_delete(n, note="clear ctl's rule number before re-adding")
                for n in changed if n in current]
        for key in sorted(desired, key=_key_order):
            p, number = desired[key], self.pipe_of[key]
            existing = snap.pipes.get(number)
            if existing is not None:
                if not self._printed_diffs(p, existing, "", gbit):
                    continue
                extras = self._extras(existing)
                if extras:
                    raise UnsupportedShaping(f"{self._label(key)}: the existing pipe has {', '.join(extras)}; ctl "
                                             "could not restore it after the run. Delete it or use another pipe")
            cmds.append(self._pipe_cmd(tool, number, *self.config_args(p),
                                       note=f"{key[0]} {key[1].value}: {p.describe()}"))
        for n in changed:
            for s, body in target.get(n, []):
                cmds.append(self._rule_add(n, s, body, note="layer-2 frames of one direction into its pipe"))
        return cmds

    # ---- verification -------------------------------------------------------------------------

    def verify(self, desired: Mapping[PipeKey, PipeConfig | None], observed: ShaperState) -> list[str]:
        """Differences by field, one message each (pure). Values are compared as `pipe show`
        prints them: bw with 3 decimals of its unit, delay in ms, plr with 6 decimals, queue in
        slots / B / whole KB; rules by their tokens (option order ignored)."""
        snap = self.snapshot(observed)
        gbit = _prints_gbit(snap)
        states = self._key_states(snap)
        out: list[str] = []
        if any(v is not None for v in desired.values()):
            out += [f"{self.host} (dummynet): {p}" for p in self.host_problems(snap)]
        for key in sorted(desired, key=_key_order):
            if key not in states:
                out.append(f"{self.host} (dummynet): link {key[0]} {key[1].value} is not carried by this bridge")
                continue
            want, st, label = desired[key], states[key], self._label(key)
            if want is None:
                for r in dict.fromkeys(st.rules + st.pipe_rules):
                    out.append(f"{label}: expected unshaped, found rule {r.render()!r}")
                continue
            if not st.rules:
                if st.disabled_rules:
                    r = st.disabled_rules[0]
                    out.append(f"{label}: rule {r.number} is in disabled set {r.set}: frames are not shaped")
                else:
                    out.append(f"{label}: no rule in {self.spec.rule_range[0]}-{self.spec.rule_range[1]} sends "
                               f"{' -> '.join(self._ports(key))} layer-2 frames to the pipe: frames are not shaped")
            if len(st.pipe_rules) > 1:
                out.append(f"{label}: {len(st.pipe_rules)} rules send frames to pipe {self.pipe_of[key]} "
                           f"({', '.join(str(r.number) for r in st.pipe_rules)}): double shaping with one_pass=0")
            if st.pipe is None:
                out.append(f"{label}: pipe {self.pipe_of[key]} does not exist"
                           + (" (dummynet drops the frames its rule sends there)" if st.rules else ""))
                continue
            out += self._printed_diffs(want, st.pipe, label, gbit)
        return out

    def verify_restore(self, before: ShaperState, now: ShaperState) -> list[str]:
        """Whole-range comparison after a restore: rules in rule_range token for token (and set),
        pipes in pipe_range as printed (traffic-dependent counts excluded). Pure."""
        b, n = self.snapshot(before), self.snapshot(now)
        out = []
        rb = rules_by_number(self._rules_in_range(b))
        rn = rules_by_number(self._rules_in_range(n))
        for num in sorted(set(rb) | set(rn)):
            want = [r.render() for r in rb.get(num, [])]
            got = [r.render() for r in rn.get(num, [])]
            if want != got:
                out.append(f"{self.host} (dummynet): rule {num} expected {want or 'absent'}, found {got or 'absent'}")
        pb = {k: v for k, v in b.pipes.items() if self._in_pipe_range(k)}
        pn = {k: v for k, v in n.pipes.items() if self._in_pipe_range(k)}
        for num in sorted(set(pb) | set(pn)):
            want_s, got_s = pipe_signature(pb.get(num)), pipe_signature(pn.get(num))
            if want_s != got_s:
                out.append(f"{self.host} (dummynet): pipe {num} expected {want_s or 'absent'}, "
                           f"found {got_s or 'absent'}")
        return out

    # ---- restore ------------------------------------------------------------------------------

    def plan_restore(self, before: ShaperState, now: ShaperState) -> list[Command]:
        """Commands bringing rule_range and pipe_range back to `before` (pure).

        Rules that changed are deleted by number and re-added with their exact listed text
        and set; pipes that existed before are re-configured from their listed parameters
        (the listing is all there is: bw exact for bit/s and Kbit/s listings and to 1 kbit/s
        for Mbit/s ones, plr to 6 decimals, a "N KB" queue as N KiB); pipes that did not
        exist are deleted. Nothing outside the ranges is touched.
        """
        b, n = self.snapshot(before), self.snapshot(now)
        tool = self.tool_for(n.major if n.major is not None else b.major)
        rb = rules_by_number(self._rules_in_range(b))
        rn = rules_by_number(self._rules_in_range(n))
        changed = [num for num in sorted(set(rb) | set(rn))
                   if [r.render() for r in rb.get(num, [])] != [r.render() for r in rn.get(num, [])]]
        cmds = [self._rule_delete(num, note="restore: remove ctl's rule") for num in changed if num in rn]
        pb = {k: v for k, v in b.pipes.items() if self._in_pipe_range(k)}
        pn = {k: v for k, v in n.pipes.items() if self._in_pipe_range(k)}
        deletes = []
        for num in sorted(set(pb) | set(pn)):
            old, cur = pb.get(num), pn.get(num)
            if old is None:
                deletes.append(self._pipe_cmd(tool, num, "delete", note="restore: pipe created by ctl"))
                continue
            if pipe_signature(old) == pipe_signature(cur):
                continue
            extras = self._extras(old)
            if extras:
                raise UnsupportedShaping(f"{self.host} (dummynet): pipe {num} had {', '.join(extras)} before the "
                                         "run; ctl cannot re-create that exactly")
            cmds.append(self._pipe_cmd(tool, num, *self._restore_args(old),
                                       note=f"restore: pipe {num} as listed before the run"))
        cmds += deletes
        for num in changed:
            for r in rb.get(num, []):
                cmds.append(self._rule_add(num, r.set, r.tokens, note="restore: rule as listed before the run"))
        return cmds

    def expected_state(self, before: ShaperState, desired: Mapping[PipeKey, PipeConfig]) -> ShaperState:
        """What the host would read back after `plan(desired, before)` ran (pure; dry runs plan
        their restore from it). The planned rules are appended to the rule list as `ipfw -S list`
        prints them and the planned pipes rendered with dummynet.c's `pipe show` formats."""
        cmds = self.read_commands()
        raw = dict(before.raw)
        planned = self.plan(desired, before)
        rules_key, pipes_key = cmds[3].text(), cmds[2].text()
        rule_lines = [l for l in raw.get(rules_key, "").splitlines() if l.strip()]
        blocks: dict[int, list[str]] = {}
        for c in planned:
            a = c.argv
            if a[:2] == ("ipfw", "add"):
                rule_lines.append(f"{int(a[2]):05d} set {a[4]} " + " ".join(a[5:]))
            elif len(a) > 3 and a[1] == "pipe" and a[3] == "config":
                num = int(a[2])
                key = next(k for k, v in self.pipe_of.items() if v == num)
                blocks[num] = pipe_show_block(num, desired[key])
        rule_lines.sort(key=lambda l: int(l.split()[0]))
        listing = raw.get(pipes_key, "").rstrip("\n")
        kept = [] if not listing else [listing]
        raw[rules_key] = "\n".join(rule_lines) + "\n"
        raw[pipes_key] = "\n".join(kept + [l for n in sorted(blocks) for l in blocks[n]]) + "\n"
        results = [CommandResult(self.host, c.argv, 0, raw.get(c.text(), ""), "") for c in cmds]
        return self.parse_state(results)

    @staticmethod
    def _restore_args(obj: DnObject) -> tuple[str, ...]:
        link, fs = obj.link, obj.flowset
        assert link is not None and fs is not None
        if fs.queue_slots is not None:
            q = str(fs.queue_slots)
        else:
            q = format_queue_arg(Queue(bytes=fs.queue_bytes))
        args: tuple[str, ...] = ("config", "bw", format_bw_arg(link.bw_bps), "delay", f"{link.delay_ms}ms",
                "plr", fs.plr_text or "0", "queue", q, *restore_red_args(fs.red))
        return args + (("burst", str(link.burst_bytes)) if link.burst_bytes else ())

    # ---- run-time reading ---------------------------------------------------------------------

    def pipe_counters(self, listing: DnListing) -> dict[PipeKey, dict[str, int]]:
        """Counters of this bridge's pipes from a parsed `pipe show` (pure)."""
        return pipe_counters(listing, self.key_of_pipe)

    def sampler_argv(self, interval: str = "0.1") -> tuple[str, ...]:
        """argv for Session.spawn: a constant sh loop printing `pipe show` then a marker line
        `---ctl-sample SEQ EPOCH---` every `interval` seconds (data only in "$@")."""
        if not re.fullmatch(r"\d+(\.\d+)?", interval) or float(interval) <= 0:
            raise ParameterError(f"sampler interval {interval!r}: give positive seconds like 0.1")
        return ("/bin/sh", "-c", SAMPLER_SCRIPT, "ctl-dummynet-sampler", interval, self._read_tool(), "pipe", "show")

    def counter_streams(self, interval_s: float) -> list[CounterStream]:
        """The `pipe show` loop; its marker carries whole seconds only, so a sample is stamped
        when its marker arrives here (the host's clock offset does not apply)."""
        return [listing_stream("shaper", self.sampler_argv(f"{interval_s:g}"), self.pipe_counters)]

    queue_limit_names = QUEUE_LIMIT_NAMES

    def conversions(self, desired: Mapping[PipeKey, PipeConfig]) -> list[Conversion]:
        """plr as the kernel holds it (values.plr_conversion); bw, delay and queue are exact or refused."""
        return [c for k in sorted(desired, key=_key_order) if (c := plr_conversion(
            f"loss of {k[0]} {k[1].value} on {self.host} (dummynet pipe {self.pipe_of[k]})", desired[k].plr))]

    @classmethod
    def queue_limits(cls, inventory: Inventory, host: str) -> dict[str, int]:
        # The inventory's facts (what a dry run assumes); the real values are read and
        # checked against the plan before anything changes.
        facts = inventory.hosts[host].facts
        return {"slot_limit": int(facts.get("net.inet.ip.dummynet.pipe_slot_limit", DEFAULT_SLOT_LIMIT)),
                "byte_limit": int(facts.get("net.inet.ip.dummynet.pipe_byte_limit", DEFAULT_BYTE_LIMIT))}

    def sampler_command(self, interval: str = "0.1") -> Command:
        """The sampler as a read-only Command (for printing and records; run it with spawn)."""
        return Command(self.sampler_argv(interval), note="long-running pipe counter sampler")

    def metadata_commands(self) -> list[Command]:
        """Read-only host facts for the run record (run before and after a run)."""
        rel = assumed_release(self.facts, self.spec.tool)
        lo, hi = self.spec.rule_range
        uname = self.facts.get("uname", f"FreeBSD {self.host} {rel}".rstrip())
        return [
            Command(("uname", "-a"), note="kernel", assume=uname + "\n"),
            Command(("freebsd-version", "-u"), note="userland", assume=rel + "\n" if rel else ""),
            Command(("sysctl", "kern.hz"), note="tick: delay granularity", assume=assumed_sysctl_text(self.facts, ["kern.hz"])),
            Command(("sysctl", "net.inet.ip.dummynet"), check=False, note="dummynet settings and limits",
                    assume=assumed_sysctl_text(self.facts, ["net.inet.ip.dummynet"])),
            Command(("sysctl", "net.link.bridge"), check=False, note="bridge filtering switches",
                    assume=assumed_sysctl_text(self.facts, ["net.link.bridge"])),
            Command(("sysctl", "net.link.ether.ipfw", "net.inet.ip.fw.one_pass"), check=False,
                    note="layer-2 ipfw hook, one_pass",
                    assume=assumed_sysctl_text(self.facts, ["net.link.ether.ipfw", "net.inet.ip.fw.one_pass"])),
            Command(("ipfw", "-S", "list", f"{lo}-{hi}"), check=False,
                    note="ctl's rule range (exit 69 'no rules in range' when empty)", assume=""),
            Command((self._read_tool(), "pipe", "show"), note="all pipes", assume=""),
        ]


# ---- module helpers ---------------------------------------------------------------------------

def _key_order(key: PipeKey) -> tuple[str, int]:
    return (key[0], 0 if key[1] is Direction.FORWARD else 1)


def _prints_gbit(snap: HostSnapshot) -> bool:
    """Whether the host's ipfw prints Gbit/s (FreeBSD 13 and later; never the classic code)."""
    return snap.listing_format == MODERN and (snap.major is None or snap.major >= BW_UINT_SINCE_MAJOR)


def _listing_of(snap: HostSnapshot) -> DnListing:
    objs = tuple(snap.pipes.values())
    return DnListing(records=(), objects=objs)
