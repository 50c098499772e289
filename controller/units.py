"""Unit parsing and formatting: pure functions, one convention for the whole project.

Conventions (stated once, used everywhere):
- rates are integers in bit/s; `k`/`M`/`G`/`T` are decimal (20M = 20 000 000 bit/s), a
  lowercase `b` means bits and an uppercase `B` means bytes (`10MB/s` = 80 Mbit/s);
- durations and delays are given with a unit (`50ms`, `2s`, `250us`, `10min`, `2h`);
  delays are kept as integer microseconds, durations as float seconds;
- probabilities (loss) are percentages (`0.01%` = 0.0001) or fractions in [0, 1] written in
  scientific notation (`1e-4`, `2.5E-3`); a bare number other than 0 (`0.01`) is refused as
  ambiguous: papers give loss in percent, so `0.01` is 0.01 % to one reader and 1 % to another;
- sizes are bytes, and K/M/G with a byte unit are binary (`64KB` = 65536 bytes), which is
  how dummynet reads `queue 64KBytes`; `KiB`/`MiB` are accepted and mean the same;
- a queue is either a number of slots (`50`) or a byte size (`64KB`).
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation

from controller.errors import ParameterError

_NUMBER = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?"

_RATE_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6, "g": 10**9, "G": 10**9,
                "t": 10**12, "T": 10**12}
_RATE_BITS = {"", "bit/s", "bits/s", "bit", "bits", "bps", "b/s", "b", "bit/sec", "bits/sec"}
_RATE_BYTES = {"Byte/s", "Bytes/s", "B/s", "Bps", "B", "byte/s", "bytes/s"}
_RATE_RE = re.compile(r"^\s*(-?)" + _NUMBER + r"\s*([kKmMgGtT]?)([A-Za-z/]*)\s*$")


def _number(mantissa: str, exponent: str | None) -> float:
    value = float(mantissa)
    if exponent:
        if len(exponent.lstrip("+-").lstrip("0")) > 6:
            # beyond any float, and more digits than int() converts (4300): 0 or infinity, which
            # the caller's own checks refuse ("must be positive") with its message
            return 0.0 if exponent.startswith("-") else math.inf
        try:
            value *= 10.0 ** int(exponent)
        except OverflowError:
            return math.inf  # refused by the caller's finiteness check, with its own message
    return value


_INT_RE = re.compile(r"\s*(-?[0-9]{1,18})\s*")


def parse_int(text: str | int, *, what: str = "value") -> int:
    """A whole number written in ASCII digits (`5201`); not `5_201`, `0x10`, `５２０１` or a
    thousand digits, all of which Python's int() would take or choke on."""
    if isinstance(text, bool):
        raise ParameterError(f"{what}: {_shown(text)} is not a whole number")
    if isinstance(text, int):
        return text
    m = _INT_RE.fullmatch(str(text))
    if not m:
        raise ParameterError(f"{what}: {_shown(text)} is not a whole number")
    return int(m.group(1))


def _shown(text: object, limit: int = 40) -> str:
    """A value as echoed in an error message: quoted, escaped, and cut to `limit` characters."""
    if not isinstance(text, str):
        return repr(text)
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def parse_rate(text: str | int | float, *, what: str = "rate", allow_zero: bool = False) -> int:
    """`20M`, `20Mbit/s`, `100Mbps`, `1G`, `2.5M`, `10MB/s`, `20000000` -> bit/s (int)."""
    if isinstance(text, bool):
        raise ParameterError(f"{what}: {_shown(text)} is not a rate")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _RATE_RE.match(str(text))
        if not m:
            raise ParameterError(f"{what}: {_shown(text)} is not a rate (examples: 20M, 100Mbit/s, 1G)")
        sign, mantissa, exponent, prefix, unit = m.groups()
        if sign:
            raise ParameterError(f"{what}: {_shown(text)} must be a positive rate")
        if unit in _RATE_BITS:
            scale = 1
        elif unit in _RATE_BYTES:
            scale = 8
        else:
            raise ParameterError(f"{what}: unknown unit {prefix + unit!r} in {_shown(text)} "
                                 "(use bit/s, bps, B/s with k, M, G)")
        value = _number(mantissa, exponent) * _RATE_PREFIX[prefix] * scale
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ParameterError(f"{what}: {_shown(text)} must be a positive rate")
    bps = int(round(value))
    if bps == 0 and not allow_zero:
        raise ParameterError(f"{what}: {_shown(text)} is below 1 bit/s")
    return bps


_DURATION_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hour": 3600.0, "hours": 3600.0,
}
_DURATION_RE = re.compile(r"^\s*" + _NUMBER + r"\s*([a-zµ]*)\s*$")


def parse_duration(text: str | int | float, *, what: str = "duration", default_unit: str | None = "s",
                   allow_zero: bool = False) -> float:
    """`30`, `30s`, `1.5s`, `10min`, `2h`, `50ms` -> seconds (float)."""
    if isinstance(text, bool):
        raise ParameterError(f"{what}: {_shown(text)} is not a duration")
    if isinstance(text, (int, float)):
        if default_unit is None:
            raise ParameterError(f"{what}: {_shown(text)} needs a unit (e.g. {str(text).strip()[:20]}ms)")
        value = float(text) * _DURATION_UNITS[default_unit]
    else:
        m = _DURATION_RE.match(str(text))
        if not m:
            raise ParameterError(f"{what}: {_shown(text)} is not a duration (examples: 50ms, 30s, 2h)")
        mantissa, exponent, unit = m.groups()
        if unit == "":
            if default_unit is None:
                raise ParameterError(f"{what}: {_shown(text)} needs a unit (e.g. {str(text).strip()[:20]}ms)")
            unit = default_unit
        if unit not in _DURATION_UNITS:
            raise ParameterError(f"{what}: unknown unit {unit!r} in {_shown(text)} (use us, ms, s, min, h)")
        value = _number(mantissa, exponent) * _DURATION_UNITS[unit]
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ParameterError(f"{what}: {_shown(text)} must be {'non-negative' if allow_zero else 'positive'}")
    return value


def parse_delay_us(text: str | int | float, *, what: str = "delay") -> int:
    """One-way delay with a mandatory unit (`50ms`, `0.5ms`, `800ms`, `0`) -> microseconds."""
    if isinstance(text, str) and text.strip() in {"0", "0.0"}:
        return 0
    if isinstance(text, (int, float)) and not isinstance(text, bool) and text == 0:
        return 0
    seconds = parse_duration(text, what=what, default_unit=None, allow_zero=True)
    us = seconds * 1e6
    rounded = int(round(us))
    if abs(us - rounded) > 1e-6 * max(1.0, us):
        raise ParameterError(f"{what}: {_shown(text)} is finer than 1 microsecond")
    return rounded


_PROB_RE = re.compile(r"^\s*" + _NUMBER + r"\s*(%?)\s*$")
PROBABILITY_FORMS = "a percentage (0.01%) or a fraction in scientific notation (1e-4)"


def parse_probability(text: str | int | float, *, what: str = "loss") -> float:
    """`0.01%` -> 0.0001, `1%` -> 0.01, `1e-4` -> 0.0001 (a fraction), `0` -> 0.

    A bare number other than zero (`0.01`, `1`, or a YAML number such as `plr: 0.01`) is refused:
    whether it is a fraction or a percentage is exactly what a researcher copying a paper's
    table gets wrong by a factor of 100. The error names both spellings of both readings."""
    if isinstance(text, bool):
        raise ParameterError(f"{what}: {_shown(text)} is not a probability")
    if isinstance(text, (int, float)):
        if text == 0:
            return 0.0
        # A number from a YAML file: its spelling is gone, only the ambiguous value is left.
        raise ParameterError(_ambiguous(what, repr(text) if isinstance(text, float) else str(text), number=True))
    m = _PROB_RE.match(str(text))
    if not m:
        raise ParameterError(f"{what}: {_shown(text)} is not a probability (examples: 0.01%, 1%, 1e-4)")
    mantissa, exponent, percent = m.groups()
    value = _number(mantissa, exponent)
    if percent:
        value /= 100.0
    elif not exponent and mantissa.strip("0."):   # any non-zero digit (a float may underflow to 0)
        raise ParameterError(_ambiguous(what, str(text).strip()))
    if not math.isfinite(value) or value < 0 or value > 1:
        raise ParameterError(f"{what}: {_shown(text)} is outside 0..1 (0%..100%)")
    return value


def _ambiguous(what: str, text: str, number: bool = False) -> str:
    """The refusal of a bare loss value, with the accepted spellings of both readings."""
    shown = _shown(text) if len(text) > 40 else text
    try:
        d = Decimal(text)
    except InvalidOperation:
        return f"{what}: {shown} is ambiguous: write {PROBABILITY_FORMS}"
    if not d.is_finite() or abs(d.adjusted()) > 30:
        return f"{what}: {shown} is ambiguous: write {PROBABILITY_FORMS}"
    plain = _plain_decimal(d)
    if d > 100:
        return f"{what}: {shown} is above 100 % as a percentage and above 1 as a fraction: write {PROBABILITY_FORMS}"
    out = (f"{what}: {'the number ' if number else ''}{shown} is ambiguous: write {plain}% or "
           f"{_scientific(d.scaleb(-2))} for {plain} percent")
    if d <= 1:
        out += f", {_plain_decimal(d.scaleb(2))}% or {_scientific(d)} for a fraction of {plain}"
    return out


def _plain_decimal(d: Decimal) -> str:
    """`Decimal('0.0100')` -> `0.01`, `Decimal('1E+2')` -> `100` (no exponent, no trailing zeros)."""
    return format(d.normalize(), "f")


def _scientific(d: Decimal) -> str:
    """Shortest scientific spelling: 0.0001 -> `1e-4`, 0.000046 -> `4.6e-5`, 0.25 -> `2.5e-1`."""
    d = d.normalize()
    if d == 0:
        return "0"
    digits = "".join(str(x) for x in d.as_tuple().digits).rstrip("0") or "0"
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{'-' if d < 0 else ''}{mant}e{d.adjusted()}"


_SIZE_UNITS = {
    "": 1, "b": 1, "B": 1, "byte": 1, "bytes": 1,
    "K": 1024, "k": 1024, "KB": 1024, "kB": 1024, "KiB": 1024, "Kbytes": 1024, "KBytes": 1024,
    "M": 1024**2, "MB": 1024**2, "MiB": 1024**2, "Mbytes": 1024**2, "MBytes": 1024**2,
    "G": 1024**3, "GB": 1024**3, "GiB": 1024**3,
}
_SIZE_RE = re.compile(r"^\s*" + _NUMBER + r"\s*([A-Za-z]*)\s*$")


def parse_size(text: str | int, *, what: str = "size", allow_zero: bool = False) -> int:
    """`1500`, `1500B`, `64KB`, `64KiB`, `100MiB`, `1GB` -> bytes (binary multiples)."""
    if isinstance(text, bool):
        raise ParameterError(f"{what}: {_shown(text)} is not a size")
    if isinstance(text, int):
        value = float(text)
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise ParameterError(f"{what}: {_shown(text)} is not a size (examples: 1500B, 64KB, 100MiB)")
        mantissa, exponent, unit = m.groups()
        if unit not in _SIZE_UNITS:
            raise ParameterError(f"{what}: unknown unit {unit!r} in {_shown(text)} (use B, KB, MB, GB)")
        value = _number(mantissa, exponent) * _SIZE_UNITS[unit]
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ParameterError(f"{what}: {_shown(text)} must be a positive size")
    if value != int(value):
        raise ParameterError(f"{what}: {_shown(text)} is not a whole number of bytes")
    return int(value)


@dataclass(frozen=True, order=True)
class Queue:
    """A drop-tail queue bound: `slots` packets or `bytes` bytes (exactly one is set)."""

    slots: int | None = None
    bytes: int | None = None

    def __post_init__(self) -> None:
        if (self.slots is None) == (self.bytes is None):
            raise ParameterError("queue: give either slots or bytes")
        if self.slots is not None and self.slots < 1:
            raise ParameterError(f"queue: {self.slots} slots is not positive")
        if self.bytes is not None and self.bytes < 1:
            raise ParameterError(f"queue: {self.bytes} bytes is not positive")

    def __str__(self) -> str:
        return f"{self.slots} slots" if self.slots is not None else format_size(self.bytes or 0)

    def to_json(self) -> dict:
        return {"slots": self.slots} if self.slots is not None else {"bytes": self.bytes}

    @classmethod
    def from_json(cls, data: dict) -> "Queue":
        return cls(slots=data.get("slots"), bytes=data.get("bytes"))


_SLOTS_RE = re.compile(r"^\s*([0-9]+)\s*(?:slots?|sl\.?|pkts?|packets?)?\s*$")


def parse_queue(text: str | int, *, what: str = "queue") -> Queue:
    """`50` or `50slots` -> 50 slots; `64KB`, `30000B` -> bytes."""
    if isinstance(text, bool):
        raise ParameterError(f"{what}: {_shown(text)} is not a queue size")
    if isinstance(text, int):
        return Queue(slots=text) if text > 0 else _bad_queue(what, text)
    m = _SLOTS_RE.match(str(text))
    if m:
        if len(m.group(1)) > 18:
            raise ParameterError(f"{what}: {_shown(text)} is not a queue size this side of 10^18")
        slots = int(m.group(1))
        return Queue(slots=slots) if slots > 0 else _bad_queue(what, text)
    return Queue(bytes=parse_size(text, what=what))


def _bad_queue(what: str, text: object) -> Queue:
    raise ParameterError(f"{what}: {_shown(text)} must be a positive number of slots or a size like 64KB")


def bdp_bytes(rate_bps: int, rtt_us: int) -> int:
    """Bandwidth-delay product in bytes (rounded up)."""
    return -(-rate_bps * rtt_us // 8_000_000)


def format_rate(bps: float | int | None) -> str:
    if bps is None:
        return "unlimited"
    for scale, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if abs(bps) >= scale:
            return f"{bps / scale:.6g} {unit}"
    return f"{bps:.6g} bit/s"


def format_rate_arg(bps: int) -> str:
    """Shortest exact CLI/YAML spelling of a rate, e.g. 20000000 -> `20M`."""
    for scale, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if bps % scale == 0:
            return f"{bps // scale}{suffix}"
    return str(bps)


def format_delay(us: int) -> str:
    if us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us / 1000:g}ms"


def format_size(n: int) -> str:
    for scale, unit in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def format_probability(p: float) -> str:
    return f"{p * 100:.6g}%"


def format_percent(p: float) -> str:
    """A probability for people, with its unit: 0.000046 -> `0.0046 %`."""
    return f"{p * 100:.6g} %"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 flow`, `3 flows`, `0 flows`: a count with its noun in the right number (`plural`
    where adding an s is wrong)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def format_bytes(n: int) -> str:
    """A byte count for people: `5,000,000 B (4.77 MiB)`, `1 MiB (1,048,576 B)`, `1,500 B`."""
    for scale, unit in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if n >= scale and n % scale == 0:
            return f"{n // scale:,} {unit} ({n:,} B)"
    for scale, unit in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if n >= 8 * scale or (unit != "KiB" and n >= scale):
            return f"{n:,} B ({_three_digits(n / scale)} {unit})"
    return f"{n:,} B"


def _three_digits(v: float) -> str:
    """About three significant digits, never an exponent: 4.77, 502, 1,005 (`.3g` printed
    1,029,471 B as `1.01e+03 KiB`)."""
    return f"{v:,.0f}" if v >= 99.95 else f"{v:.3g}"


@dataclass(frozen=True)
class Conversion:
    """A value changed on its way to the rack: what was asked for, what is applied, and why.

    Every place that rounds, caps or converts a parameter (a queue in bytes held as slots, a
    queue capped by a bridge's limit, a rate or a loss rounded to what a shaper can hold, host
    settings raised for the experiment) returns one of these; `ctl run` prints `warning()` on
    stderr, lists them in the dry run and records them in the run's manifest (`conversions`)."""

    what: str       # the parameter and where: "bottleneck queue of path1 (both directions)"
    asked: str      # with units: "1 BDP = 5,000,000 B (4.77 MiB)"
    applied: str    # with units: "1000 slots (1,500,000 B of 1500-byte packets)"
    reason: str     # why, naming the limit: "above dn1's net.inet.ip.dummynet.pipe_byte_limit ..."

    def warning(self) -> str:
        return f"warning: {self.what}: {self.asked} -> {self.applied}: {self.reason}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Conversion":
        return cls(**{k: str(data.get(k, "")) for k in ("what", "asked", "applied", "reason")})
