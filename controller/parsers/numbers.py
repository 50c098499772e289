"""Numbers read from a host's output: finite, and no larger than a 64-bit counter holds (pure).

A tool prints counters (u64 at most), rates, times and levels; no real output has a number beyond
2**64 in magnitude, NaN or infinity where a measurement belongs. Such a number is a hostile or broken
output: float() turns 400 digits into inf, round(inf) and int(inf) raise OverflowError, and an
unbounded integer reaches JSON, records and arithmetic downstream. Each is refused here as ParseError
(a one-line error from `ctl parse`, a gap or an error in a run), never a traceback.
"""
from __future__ import annotations

import json
import math
from typing import Any

from controller.errors import ParseError

MAX_ABS = 2 ** 64          # the largest magnitude of a number ctl takes from a tool's output


def _shown(value: Any) -> str:
    text = str(value) if not isinstance(value, int) or abs(value) < 10 ** 40 else f"a {len(str(abs(value)))}-digit number"
    return text if len(text) <= 40 else text[:37] + "..."


def finite(value: Any, what: str = "number") -> float:
    """float(value), refused (ParseError) when it is not finite or beyond MAX_ABS."""
    try:
        x = float(value)
    except OverflowError:                       # an int too large for a float
        raise ParseError(f"{what} out of range: {_shown(value)}") from None
    if not math.isfinite(x) or abs(x) > MAX_ABS:
        raise ParseError(f"{what} out of range: {_shown(value)}")
    return x


def bounded(value: int, what: str = "number") -> int:
    """An integer already read, refused beyond MAX_ABS."""
    if abs(value) > MAX_ABS:
        raise ParseError(f"{what} out of range: {_shown(value)}")
    return value


def integer(text: str, what: str = "number", base: int = 10) -> int:
    """int(text, base) within MAX_ABS (ValueError for a malformed one, as int() raises; ParseError beyond)."""
    if len(text.strip().lstrip("+-").lstrip("0")) > 40:      # 2**64 is 20 decimal digits, 16 hex ones
        raise ParseError(f"{what} out of range: {_shown(text)}")
    return bounded(int(text, base), what)


def scaled(number: Any, factor: float, what: str = "number") -> int:
    """round(number * factor) (a value with its unit's multiplier: "12.5 Mbit/s"), both finite and bounded."""
    return int(round(finite(finite(number, what) * factor, what)))


def _json_float(text: str) -> float:
    return finite(text, "JSON number")


def _json_int(text: str) -> int:
    if len(text) > 21:                          # 2**64 has 20 digits; int() of a long one is slow
        raise ParseError(f"JSON number out of range: {_shown(text)}")
    return bounded(int(text), "JSON number")


def _json_constant(text: str) -> Any:
    raise ParseError(f"JSON number out of range: {text}")


def json_decoder(**kw: Any) -> json.JSONDecoder:
    """A decoder whose numbers are finite and bounded: NaN, Infinity, 1e999 and 400 digits are refused."""
    return json.JSONDecoder(parse_float=_json_float, parse_int=_json_int, parse_constant=_json_constant, **kw)


_DECODER = json_decoder()


def loads(text: str) -> Any:
    """json.loads with bounded numbers (see json_decoder)."""
    return _DECODER.decode(text)


def check(value: Any, what: str) -> Any:
    """Walk a parser's result (lists and dicts): every number finite and within MAX_ABS, else ParseError.

    The last line of defence for `ctl parse`: the parsers bound the numbers they convert, this catches
    an integer a text parser passed through as read."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, bool) or v is None or isinstance(v, str):
            continue
        elif isinstance(v, int):
            if abs(v) > MAX_ABS:
                raise ParseError(f"{what}: a number out of range in the input: {_shown(v)}")
        elif isinstance(v, float) and (not math.isfinite(v) or abs(v) > MAX_ABS):
            raise ParseError(f"{what}: a number out of range in the input: {_shown(v)}")
    return value
