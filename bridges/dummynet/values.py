"""Dummynet's numbers as ipfw reads and prints them (pure): the kernel's limits and constants,
arguments formatted so they read back exactly, what `pipe show` prints for a config, and
what a dry run assumes a bridge holds.
"""
from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Iterable, Mapping

from bridges.base import RED_SCALE, PipeConfig, Red
from controller.errors import ParameterError
from controller.units import Conversion, Queue, format_delay, format_percent

if TYPE_CHECKING:
    from bridges.ipfw_records import RedParams

DN_MAX_ID = 65536                 # pipe N's FIFO scheduler is N+DN_MAX_ID, its flowset N+2*DN_MAX_ID


PLR_SCALE = 0x7FFFFFFF            # plr is stored as (int)(p * 0x7fffffff): 31 bits


BW_MAX_UINT = 4294967295          # read_bandwidth(): "bandwidth too large" above UINT_MAX (uint64 code)


BW_MAX_INT = 2147483647           # older read_bandwidth() kept bw in an int (errors when it goes negative)


BW_UINT_SINCE_MAJOR = 13          # first major we know to carry the uint64/G-suffix code (13.1 checked);


                                  # older or unknown releases get the int limit: conservative, never wrong
DNCTL_SINCE_MAJOR = 14            # dnctl(8) ships with FreeBSD 14.0


DELAY_MAX_MS = 10000              # "delay must be < 10000" (the test is delay > 10000)


DEFAULT_SLOT_LIMIT = 100          # what ipfw assumes when the sysctl cannot be read


DEFAULT_BYTE_LIMIT = 1048576


MIN_QUEUE_BYTES = 1500            # config_fs(): a byte queue below 1500 B is silently bumped to 16384 B


KB_PRINT_FROM = 8192              # print_flowset_parms(): byte queues >= 8192 print as l/1024 "KB"


QUEUE_LIMIT_NAMES = ("net.inet.ip.dummynet.pipe_slot_limit (inventory facts, else FreeBSD's default)",
                     "net.inet.ip.dummynet.pipe_byte_limit (inventory facts, else FreeBSD's default)")


PLR_MIN = 1e-6                    # `pipe show` prints plr with %f: below 1e-6 it reads 0.000000


BURST_MAX_EXACT = 10**9 - 1       # humanize_number() prints bursts >= 10^9 with a binary prefix


SYSCTL_NAMES = ("kern.hz", "net.inet.ip.dummynet", "net.link.bridge", "net.link.ether.ipfw",
                "net.inet.ip.fw.one_pass")


# What a dry run assumes a bridge prints when Host.facts does not say: the tuning of
# firmware-notes/dummynet.md with FreeBSD's default dummynet limits.
ASSUMED_SYSCTLS: dict[str, str] = {
    "kern.hz": "1000",
    "net.inet.ip.dummynet.pipe_slot_limit": str(DEFAULT_SLOT_LIMIT),
    "net.inet.ip.dummynet.pipe_byte_limit": str(DEFAULT_BYTE_LIMIT),
    "net.inet.ip.dummynet.io_fast": "0",
    "net.inet.ip.dummynet.expire": "1",
    "net.inet.ip.dummynet.hash_size": "64",
    "net.link.bridge.ipfw": "1",
    "net.link.bridge.pfil_member": "0",
    "net.link.bridge.pfil_bridge": "0",
    "net.link.bridge.pfil_onlyip": "0",
    "net.link.ether.ipfw": "1",
    "net.inet.ip.fw.one_pass": "1",
}


# What a dry run assumes `freebsd-version -u` prints when neither `facts.os_release` nor a forced
# `shaper.tool` says (firmware-notes/dummynet.md, "Dry runs"): the release of the shipped lab
# example's bridges, so pipes are planned with dnctl. Said in one warning line, never silently.
ASSUMED_RELEASE = "14.1-RELEASE"


def assumed_sysctl_text(facts: Mapping[str, str], names: Iterable[str]) -> str:
    """What a dry run takes `sysctl NAMES...` to print: ASSUMED_SYSCTLS, overridden by the
    `kern.*`/`net.*` keys of the host's `facts`."""
    values = dict(ASSUMED_SYSCTLS)
    values.update({k: v for k, v in facts.items() if k.startswith(("kern.", "net."))})
    lines = [f"{k}: {v}" for k, v in values.items() if any(k == n or k.startswith(n + ".") for n in names)]
    return "".join(line + "\n" for line in lines)


def assumed_release(facts: Mapping[str, str], tool: str) -> str:
    """What a dry run takes `freebsd-version -u` to print: `facts.os_release`; without it and
    with `tool: auto`, ASSUMED_RELEASE (dry_run_assumptions says so); with a forced tool, nothing."""
    return facts.get("os_release", "") or (ASSUMED_RELEASE if tool == "auto" else "")


_LIMIT_FACTS = ("net.inet.ip.dummynet.pipe_slot_limit", "net.inet.ip.dummynet.pipe_byte_limit", "kern.hz")


def dry_run_assumptions(host: str, facts: Mapping[str, str], tool: str) -> list[str]:
    """One sentence per value a dry run of this bridge assumes because `facts` does not give it."""
    out = []
    if not facts.get("os_release") and tool == "auto":
        major = int(ASSUMED_RELEASE.split(".")[0])
        out.append(f"{host} (dummynet): facts.os_release is not set and shaper.tool is auto: this dry run assumes "
                   f"FreeBSD {ASSUMED_RELEASE} (pipes configured with {'dnctl' if major >= DNCTL_SINCE_MAJOR else 'ipfw'}"
                   "); a real run reads the release from the bridge (set facts.os_release or shaper.tool to plan for "
                   "yours)")
    missing = [k for k in _LIMIT_FACTS if k not in facts]
    if missing:
        out.append(f"{host} (dummynet): facts do not give {', '.join(missing)}: this dry run assumes "
                   + ", ".join(f"{k}={ASSUMED_SYSCTLS[k]}" for k in missing)
                   + " (FreeBSD's defaults, firmware-notes/dummynet.md); a real run checks the plan against the "
                     "bridge's own values")
    return out


# A bridge at baseline with rc.firewall's "open" type: ctl's range is empty.
ASSUMED_RULES = "65000 set 0 allow ip from any to any\n65535 set 31 deny ip from any to any\n"


# The sampler: a constant script; the interval and the listing command come in "$@".
SAMPLER_SCRIPT = ('interval="$1"; shift; seq=0; '
                  'while :; do "$@" || exit 1; seq=$((seq + 1)); '
                  'echo "---ctl-sample $seq $(date +%s)---"; sleep "$interval"; done')


def format_bw_arg(bps: int | None) -> str:
    """bw argument for `pipe N config bw ...`: an integer with a unit read_bandwidth() knows.

    read_bandwidth() uses strtoul(): no decimals ("1.5Mbit/s" would be 1 Mbit/s), and the G
    suffix only exists in newer ipfw, so whole Mbit/s values use Mbit/s even above 1 Gbit/s
    ("1000Mbit/s"); otherwise Kbit/s, otherwise plain bit/s. None (unlimited) is "0".
    """
    if bps is None:
        return "0"
    if not isinstance(bps, int) or bps <= 0:
        raise ParameterError(f"bw: {bps!r} is not a positive whole number of bit/s")
    if bps % 10**6 == 0:
        return f"{bps // 10**6}Mbit/s"
    if bps % 10**3 == 0:
        return f"{bps // 10**3}Kbit/s"
    return f"{bps}bit/s"


def format_delay_arg(delay_us: int) -> str:
    """delay argument: whole milliseconds (dummynet strtoul()s the number and ignores "ms")."""
    if delay_us % 1000:
        raise ParameterError(f"delay: {format_delay(delay_us)} is not a whole number of milliseconds "
                             "(dummynet delays are integer ms)")
    return f"{delay_us // 1000}ms"


def format_plr_arg(plr: float) -> str:
    """plr argument: the shortest decimal that strtod() turns back into the same double."""
    if plr == 0:
        return "0"
    return format(Decimal(repr(float(plr))).normalize(), "f")


def format_queue_arg(q: Queue) -> str:
    """queue argument: `N` slots, `NKbytes` (x1024 bytes) or `NB` bytes."""
    if q.slots is not None:
        return str(q.slots)
    assert q.bytes is not None
    if q.bytes % 1024 == 0:
        return f"{q.bytes // 1024}Kbytes"
    return f"{q.bytes}B"


def plr_internal(plr: float) -> int:
    """The kernel's 31-bit plr: `(int)(d * 0x7fffffff)` after clamping to [0, 1] (truncation)."""
    d = min(1.0, max(0.0, float(plr)))
    return int(d * PLR_SCALE)


def plr_conversion(what: str, plr: float) -> Conversion | None:
    """The plr the kernel will hold, when it differs from `plr` in ctl's 6 significant digits:
    dummynet keeps `(int)(p * 0x7fffffff)`, truncated (a step of 4.7e-10)."""
    held = plr_internal(plr) / PLR_SCALE
    if not plr or format_percent(held) == format_percent(plr):
        return None
    return Conversion(what, format_percent(plr), f"{held * 100:.9g} %",
                      "dummynet holds plr as a 31-bit integer, (int)(p x 0x7fffffff), truncated")


def printed_plr(plr: float) -> str | None:
    """How `pipe show` prints a configured plr ("%f"), or None when the kernel holds 0."""
    v = plr_internal(plr)
    return None if v == 0 else f"{1.0 * v / float(PLR_SCALE):f}"   # C: "plr %f"


def printed_bw(bps: int | None, gbit: bool = True) -> str:
    """How `pipe show` prints a bandwidth ("%7.3f <unit>", without the padding)."""
    if not bps:
        return "unlimited"
    b = float(bps)
    if gbit and b >= 1e9:
        return f"{b / 1e9:.3f} Gbit/s"
    if b >= 1e6:
        return f"{b / 1e6:.3f} Mbit/s"
    if b >= 1e3:
        return f"{b / 1e3:.3f} Kbit/s"
    return f"{b:.3f} bit/s"


def printed_queue(q: Queue) -> str:
    """How `pipe show` prints a queue bound: "50 sl.", "1500 B", "64 KB" (KB truncated)."""
    if q.slots is not None:
        return f"{q.slots} sl."
    assert q.bytes is not None
    return f"{q.bytes // 1024} KB" if q.bytes >= KB_PRINT_FROM else f"{q.bytes} B"


def red_args(red: Red | None) -> tuple[str, ...]:
    """`red|gred W_Q/MIN_TH/MAX_TH/MAX_P [ecn]` of `pipe N config` (nothing: drop-tail, which a
    `pipe N config` without them sets)."""
    if red is None:
        return ()
    return ("gred" if red.gentle else "red", red.spec()) + (("ecn",) if red.ecn else ())


def listed_red(red: Red) -> RedParams:
    """RED as the kernel holds it and `pipe show` prints it (ipfw's dummynet.c: "%cRED w_q %f
    min_th %d max_th %d max_p %f" [" (ecn)"], w_q and max_p being (int)(x * 65536) / 65536)."""
    # Imported here, not at the top: every scenario imports this module (queue sizing), and the
    # listing's 16 frozen dataclasses cost ~8 ms of every `ctl run`'s start-up (issue 28) where no
    # dummynet bridge is shaped (dnpipe, tc); a dummynet bridge's driver imports them anyway.
    from bridges.ipfw_records import RedParams
    w, p = int(red.w_q * RED_SCALE) / RED_SCALE, int(red.max_p * RED_SCALE) / RED_SCALE
    return RedParams(gentle=red.gentle, w_q_text=f"{w:f}", w_q=w, min_th=red.min_th, max_th=red.max_th,
                     max_p_text=f"{p:f}", max_p=p, ecn=red.ecn)


def red_of(listed: RedParams | None) -> Red | None:
    """The Red a listing shows (w_q and max_p as printed, 6 decimals)."""
    if listed is None:
        return None
    return Red(w_q=listed.w_q, min_th=listed.min_th, max_th=listed.max_th, max_p=listed.max_p,
               gentle=listed.gentle, ecn=listed.ecn)


def restore_red_args(listed: RedParams | None) -> tuple[str, ...]:
    """`red|gred ...` that sets again what a listing shows (its printed decimals parse back to the
    same fixed-point values: 6 decimals are finer than 1/65536)."""
    if listed is None:
        return ()
    return (("gred" if listed.gentle else "red"),
            f"{listed.w_q_text}/{listed.min_th}/{listed.max_th}/{listed.max_p_text}") + (("ecn",) if listed.ecn else ())


def pipe_show_block(num: int, p: PipeConfig) -> list[str]:
    """`pipe N show` of a freshly configured pipe (dummynet.c format strings; see the fixture)."""
    plr = printed_plr(p.plr)
    queue = printed_queue(p.queue) if p.queue.bytes is not None else f"{p.queue.slots:3d} sl."
    bw = printed_bw(p.bw_bps)
    bw = f"{bw.split()[0]:>7} {bw.split()[1]}" if bw != "unlimited" else "unlimited     "
    return [f"{num:05d}: {bw} {p.delay_us // 1000:4d} ms burst {p.burst_bytes or 0}",
            f"q{num + 2 * DN_MAX_ID:05d} {queue}{'plr ' + plr if plr else ''} 0 flows (1 buckets) "
            f"sched {num + DN_MAX_ID} weight 0 lmax 0 pri 0 " + (f"\n{listed_red(p.red).render()}" if p.red else "droptail"),
            f" sched {num + DN_MAX_ID} type FIFO flags 0x0 0 buckets 0 active"]
