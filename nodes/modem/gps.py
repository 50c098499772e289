"""gpsd `gpspipe -w` JSON lines: TPV (time-position-velocity) and SKY reports.

Rules from gpsd_json(5) as recorded in 02e: fields are optional and simply absent when unknown (gpsd
never sends nulls); TPV "mode" 0 = unknown, 1 = no fix, 2 = 2D, 3 = 3D. Here a TPV with mode < 2 has no
position (lat/lon/alt None, and no speed/track either: they come from the fix), and a 2D fix has no
altitude. Altitude prefers altMSL, falls back to the deprecated "alt" (gpsd 3.16 sends only that).

A line that is not valid JSON (e.g. a torn line at the start of a capture, or the fixture's redacted
"45.xxxxxxxxx") is reported under "errors" and skipped: one bad line must not lose a drive's worth of
positions. Stdlib only.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from nodes.modem.radio import ParseError, bounded
from nodes.modem.ranges import within


@dataclass(frozen=True)
class GpsFix:
    """One TPV report, normalized (units in the names)."""

    time: str | None               # ISO 8601 UTC as gpsd sent it
    time_unix: float | None
    mode: int                      # 0 unknown, 1 no fix, 2 2D, 3 3D
    lat: float | None
    lon: float | None
    alt_m: float | None            # MSL when known (altMSL, else alt)
    alt_hae_m: float | None
    speed_mps: float | None
    track_deg: float | None
    climb_mps: float | None
    eph_m: float | None            # horizontal error estimate (newer gpsd)
    epx_m: float | None
    epy_m: float | None
    epv_m: float | None
    device: str | None

    @property
    def has_fix(self) -> bool:
        return self.mode >= 2

    @property
    def position(self) -> tuple[float, float] | None:
        if self.lat is None or self.lon is None:
            return None
        return self.lat, self.lon

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GpsSky:
    time: str | None
    hdop: float | None
    vdop: float | None
    pdop: float | None
    gdop: float | None
    satellites_seen: int | None
    satellites_used: int | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _f(d: dict, key: str) -> float | None:
    """A number of the report; one that is not finite or beyond 2**64 (1e999, 400 digits) is ParseError."""
    v = d.get(key)
    return float(bounded(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# Geometry (WGS 84, gpsd_json(5): lat/lon in degrees, +/- North/South and East/West; track "degrees from
# true north"): a value outside these is no position and no course. The report is refused (ParseError: a
# line's error in `ctl parse gpsd`, a report the field logger counts and skips), never clamped.
POSITION = {"lat": (-90.0, 90.0), "lon": (-180.0, 180.0), "track": (0.0, 360.0)}


def _placed(d: dict, key: str) -> float | None:
    v = _f(d, key)
    lo, hi = POSITION[key]
    if v is not None and within(v, lo, hi) is None:
        raise ParseError("gpsd: TPV %s %r is outside %g..%g degrees" % (key, v, lo, hi))
    return v


def _count(d: dict, key: str) -> int | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 10_000:
        raise ParseError("gpsd: %s %.40r is not a satellite count" % (key, v))
    return v


def _unix(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def tpv(d: dict) -> GpsFix:
    mode = d.get("mode")
    mode = 0 if mode is None else mode
    if isinstance(mode, bool) or mode not in (0, 1, 2, 3):     # gpsd: 0 unknown, 1 no fix, 2 2D, 3 3D
        raise ParseError("gpsd: TPV mode %.40r is not 0, 1, 2 or 3" % (mode,))
    mode = int(mode)
    fix = mode >= 2
    three_d = mode >= 3
    alt = _f(d, "altMSL")
    if alt is None:
        alt = _f(d, "alt")
    return GpsFix(
        time=d.get("time"), time_unix=_unix(d.get("time")), mode=mode,
        lat=_placed(d, "lat") if fix else None, lon=_placed(d, "lon") if fix else None,
        alt_m=alt if three_d else None, alt_hae_m=_f(d, "altHAE") if three_d else None,
        speed_mps=_f(d, "speed") if fix else None, track_deg=_placed(d, "track") if fix else None,
        climb_mps=_f(d, "climb") if three_d else None,
        eph_m=_f(d, "eph") if fix else None, epx_m=_f(d, "epx") if fix else None,
        epy_m=_f(d, "epy") if fix else None, epv_m=_f(d, "epv") if three_d else None,
        device=d.get("device"),
    )


def sky(d: dict) -> GpsSky:
    sats = d.get("satellites")
    seen = _count(d, "nSat")
    used = _count(d, "uSat")
    if isinstance(sats, list):
        seen = seen if seen is not None else len(sats)
        used = used if used is not None else sum(1 for s in sats if isinstance(s, dict) and s.get("used"))
    return GpsSky(time=d.get("time"), hdop=_f(d, "hdop"), vdop=_f(d, "vdop"), pdop=_f(d, "pdop"),
                  gdop=_f(d, "gdop"), satellites_seen=seen, satellites_used=used)


# gpsd's reports are JSON objects whose "class" names the report type ("TPV", "SKY", "DEVICE", "ERROR",
# ...; gpsd_json(5): "Object types include, but are not limited to" these): an upper-case word.
_CLASS = re.compile(r"[A-Z][A-Z0-9_]{0,31}")


def parse(text: str) -> dict[str, Any]:
    """gpspipe -w output. A line that is not a report is that line's error; input with no report at all, or
    with more lines in error than reports (garbage with a few braces in it), is ParseError: what comes out
    stays bounded by what was recognised."""
    fixes: list[GpsFix] = []
    skies: list[GpsSky] = []
    other: dict[str, int] = {}
    version: dict | None = None
    devices: list[dict] = []
    errors: list[dict[str, Any]] = []
    seen_lines = 0
    reports_seen = 0
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s.startswith("{"):
            continue                      # prompts ("gpspipe -w -n 5") and prose
        seen_lines += 1
        try:
            d = json.loads(s)
        except json.JSONDecodeError as exc:
            errors.append({"line": n, "error": exc.msg, "text": s[:120]})
            continue
        except (ValueError, RecursionError) as exc:   # a 5000-digit number; arrays nested thousands deep
            errors.append({"line": n, "error": f"not a gpsd report ({type(exc).__name__})", "text": s[:120]})
            continue
        if not isinstance(d, dict):
            errors.append({"line": n, "error": "not a JSON object", "text": s[:120]})
            continue
        cls = d.get("class")
        reports = [d]
        if cls == "POLL":                 # ?POLL; answer: {"class":"POLL","tpv":[...],"sky":[...]}
            reports = list(d.get("tpv") or []) + list(d.get("sky") or [])
        for r in reports:
            if not isinstance(r, dict):
                errors.append({"line": n, "error": "a POLL entry that is not a JSON object", "text": s[:120]})
                continue
            c = r.get("class")
            if not isinstance(c, str) or not _CLASS.fullmatch(c):
                errors.append({"line": n, "error": "not a gpsd report (no class)", "text": s[:120]})
                continue
            try:
                if c == "TPV":
                    fixes.append(tpv(r))
                elif c == "SKY":
                    skies.append(sky(r))
            except ParseError as exc:     # a report with a value no gpsd sends: that line's error
                errors.append({"line": n, "error": str(exc), "text": s[:120]})
                continue
            reports_seen += 1
            if c in ("TPV", "SKY"):
                pass
            elif c == "VERSION":
                version = r
            elif c == "DEVICES":
                devices.extend(x for x in r.get("devices") or [] if isinstance(x, dict))
            else:
                other[str(c)] = other.get(str(c), 0) + 1
    if seen_lines == 0:
        raise ParseError("gpsd: no JSON lines (expected `gpspipe -w` output)")
    if seen_lines == len(errors) or reports_seen == 0:
        first = f"; first error on line {errors[0]['line']}: {errors[0]['error'][:120]}" if errors else ""
        raise ParseError(f"gpsd: no gpsd report in {seen_lines} JSON line(s){first}")
    if len(errors) > reports_seen:
        raise ParseError(f"gpsd: {len(errors)} JSON line(s) are not gpsd reports, more than the {reports_seen} that "
                         f"are (first on line {errors[0]['line']}: {errors[0]['error'][:120]}): not gpspipe -w output")
    last_fix = next((f for f in reversed(fixes) if f.has_fix), None)
    return {"fixes": fixes, "skies": skies, "version": version, "devices": devices, "other": other,
            "errors": errors, "fix": last_fix}


def to_json(text: str) -> dict[str, Any]:
    p = parse(text)
    return {"tool": "gpsd", "tpv": [f.to_json() for f in p["fixes"]], "sky": [s.to_json() for s in p["skies"]],
            "version": p["version"], "devices": p["devices"], "other": p["other"], "errors": p["errors"],
            "fix": None if p["fix"] is None else p["fix"].to_json()}


def gpspipe_argv(gpsd: str = "127.0.0.1:2947", count: int | None = None) -> tuple[str, ...]:
    """`gpspipe -w [-n N] host:port` -- a stream of JSON reports (one TPV per fix, typically 1 Hz)."""
    argv: tuple[str, ...] = ("gpspipe", "-w")
    if count is not None:
        argv += ("-n", str(count))
    return argv + (gpsd,)
