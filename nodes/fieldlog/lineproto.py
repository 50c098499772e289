"""InfluxDB line protocol: the one encoder of ctl (standard library only, Python >= 3.9).

The controller's telemetry (`controller.telemetry.points.to_line`) and the field logger on a
modem host (`nodes.fieldlog.influx.to_line`) both encode with `line()`, so a point is sent
byte for byte the same whichever side sends it (InfluxDB then stores it once).

Tags are sorted and empty tag values dropped (InfluxDB refuses them); a field that is None
or not finite is left out, never faked; a point without any field is no line at all.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Optional, Tuple

_ESC_KEY = str.maketrans({"\\": "\\\\", ",": "\\,", "=": "\\=", " ": "\\ "})
_ESC_MEASUREMENT = str.maketrans({"\\": "\\\\", ",": "\\,", " ": "\\ "})
_ESC_STRING = str.maketrans({"\\": "\\\\", '"': '\\"'})


def escape_key(s: str) -> str:
    return s.translate(_ESC_KEY)


def escape_measurement(s: str) -> str:
    return s.translate(_ESC_MEASUREMENT)


def encode_field(v: Any) -> Optional[str]:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v}i"
    if isinstance(v, float):
        if not math.isfinite(v):
            return None  # InfluxDB cannot store NaN/inf: the field is left out, never faked
        return repr(v)
    return f'"{str(v).translate(_ESC_STRING)}"'


@functools.lru_cache(maxsize=4096)
def series(measurement: str, tags: Tuple[Tuple[str, str], ...]) -> str:
    """The measurement-and-tags prefix of a line; a run's points share a few hundred of them."""
    return escape_measurement(measurement) + "".join(f",{escape_key(k)}={escape_key(v)}" for k, v in tags if v != "")


def line(measurement: str, tags: Mapping[str, Any], fields: Mapping[str, Any], time_ns: int) -> Optional[str]:
    """One point as a line of InfluxDB line protocol (None when it has no field to store)."""
    encoded = []
    for k, v in sorted(fields.items()):
        if v is None:
            continue
        enc = encode_field(v)
        if enc is not None:
            encoded.append(f"{escape_key(k)}={enc}")
    if not encoded:
        return None
    prefix = series(measurement, tuple(sorted((k, str(v)) for k, v in tags.items())))
    return f"{prefix} {','.join(encoded)} {int(time_ns)}"
