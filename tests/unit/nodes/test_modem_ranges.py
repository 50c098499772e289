"""Every number a modem parser produces is within its quantity's range (nodes/modem/ranges.py), or None and
flagged in the sample's `out_of_range` (issue 23): the check itself, the sample, one absurd value through
each parser, and Hypothesis fuzzing of the four modem kinds of `ctl parse` (real samples with their numbers
replaced by arbitrary ones, plus the adversarial and absurd-number strategies of the parsers' fuzz tests)."""
from __future__ import annotations

import json
import math
import re
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.errors import ParseError
from controller.parsers import parse
from nodes.fieldlog import points as P
from nodes.modem import at, mmcli, wimax
from nodes.modem.radio import RadioSample, merge_samples
from nodes.modem.ranges import RANGES, band_ok, range_of, within
from tests.unit.controller.parsers.test_fuzz import EXAMPLES, absurd_numbers, adversarial, seeds

KINDS = ("at", "mmcli", "qmicli", "wimax")
MM = Path(__file__).resolve().parents[2] / "fixtures" / "generated" / "modemmanager"


def modem_seeds(kind: str) -> list[str]:
    """The kind's fuzz seeds, and for mmcli the recorded ModemManager outputs (signal, modem, location)."""
    extra = [p.read_text() for p in sorted(MM.glob("*_lte_cell_a.*")) + sorted(MM.glob("*_endc.json"))
             if p.suffix in (".json", ".txt")] if kind == "mmcli" else []
    return seeds(kind) + extra


# ---- the check -------------------------------------------------------------------------------------

def test_within_keeps_the_ends_and_refuses_what_is_outside():
    assert within(-156, -156.0, -31.0) == -156.0 and isinstance(within(-156, -156.0, -31.0), float)
    assert within(-31.0, -156.0, -31.0) == -31.0
    assert within(-156.5, -156.0, -31.0) is None and within(-30.9, -156.0, -31.0) is None
    for bad in (math.nan, math.inf, -math.inf, True, False, "5", None, [1]):
        assert within(bad, -1e9, 1e9) is None, bad
    assert within(503, 0, 503, integral=True) == 503 and within(504, 0, 503, integral=True) is None
    assert within(42.0, 0, 503, integral=True) == 42 and type(within(42.0, 0, 503, integral=True)) is int
    assert within(42.5, 0, 503, integral=True) is None


def test_ranges_depend_on_the_technology_where_the_standards_differ():
    assert range_of("pci", "lte").hi == 503 and range_of("pci", "nr5g-sa").hi == 1007
    assert range_of("pci", "nr5g-nsa").hi == 503            # the LTE anchor's fields
    assert range_of("cell_id_int", "nr5g").hi == 2 ** 36 - 1 and range_of("cell_id_int", "lte").hi == 2 ** 28 - 1
    assert range_of("arfcn", "gsm").hi == 1023 and range_of("arfcn", None).hi == 3279165
    assert range_of("tac", "lte").hi == 65535 and range_of("tac", "nr5g-sa").hi == 2 ** 24 - 1
    assert band_ok("B7") and band_ok("n78") and band_ok("3") and band_ok(None)
    assert not band_ok("B0") and not band_ok("B257") and not band_ok("n1025") and not band_ok("B" + "9" * 30)


# ---- the sample -------------------------------------------------------------------------------------

def test_a_value_out_of_range_is_none_and_flagged_never_clamped():
    s = RadioSample(technology="lte", rsrp_dbm=300.0, rsrq_db=-10.0, pci=600, band="B999", arfcn=1650,
                    cell_id_int=2 ** 40, signal_quality_pct=101)
    assert (s.rsrp_dbm, s.pci, s.band, s.cell_id_int, s.signal_quality_pct) == (None, None, None, None, None)
    assert (s.rsrq_db, s.arfcn) == (-10.0, 1650)
    assert s.out_of_range == ("rsrp_dbm", "signal_quality_pct", "cell_id_int", "pci", "band")
    assert s.refused() == 5
    back = RadioSample.from_json(json.loads(json.dumps(s.to_json())))
    assert back == s and back.out_of_range == s.out_of_range


def test_in_range_samples_are_unchanged_and_unflagged():
    s = RadioSample(technology="nr5g-sa", rsrp_dbm=-104, rsrq_db=-12.0, sinr_db=14.0, pci=538, arfcn=620640,
                    band="n78", tac=6334976, cell_id_int=39613121108)
    assert s.out_of_range == () and s.rsrp_dbm == -104.0 and isinstance(s.rsrp_dbm, float)
    assert s.to_json()["out_of_range"] == []


def test_merge_keeps_the_flags_of_every_part_and_the_legs_count():
    leg = RadioSample(technology="nr5g", pci=2000, sinr_db=21.0)
    a = RadioSample(technology="nr5g-nsa", rsrp_dbm=-999.0, secondary=(leg,))
    b = RadioSample(technology="nr5g-nsa", rsrp_dbm=-90.0, tac=12)
    m = merge_samples([a, b])
    assert m is not None and m.rsrp_dbm == -90.0 and m.out_of_range == ("rsrp_dbm",)
    assert m.secondary[0].pci is None and m.secondary[0].out_of_range == ("pci",) and m.refused() == 2


def test_the_radio_point_carries_the_flags_even_when_nothing_else_is_left():
    s = RadioSample(technology="lte", rsrp_dbm=20.0, secondary=(RadioSample(technology="nr5g", pci=-1),))
    rec = P.radio_record(s, 1, 7, {"run": "r"})
    assert rec is not None and rec["f"]["out_of_range"] == "rsrp_dbm,nr_pci" and "rsrp_dbm" not in rec["f"]
    ok = P.radio_record(RadioSample(technology="lte", rsrp_dbm=-90.0), 1, 7, {"run": "r"})
    assert ok is not None and "out_of_range" not in ok["f"]


# ---- one absurd value through each parser -----------------------------------------------------------

def test_at_qeng_with_an_rsrp_of_plus_300_dbm():
    s = at.parse_sample('+QENG: "servingcell","NOCONN","LTE","FDD",460,01,5F1EA15,12,1650,3,5,5,DE10,300,-12,-68,10')
    assert s is not None and s.rsrp_dbm is None and "rsrp_dbm" in s.out_of_range
    assert s.pci == 12 and s.arfcn == 1650 and s.band == "B3"


def test_at_qnwinfo_band_beyond_any_band():
    s = at.parse_sample('+QNWINFO: "FDD LTE","46001","LTE BAND 99999",1650')
    assert s is not None and s.band is None and s.out_of_range == ("band",)


def test_mmcli_signal_with_an_rsrq_of_plus_90_db():
    text = json.dumps({"modem": {"signal": {"lte": {"rsrp": "-95.00", "rsrq": "90.00", "rssi": "-65.00",
                                                    "snr": "7.50"}, "refresh": {"rate": "10"}}}})
    out = mmcli.to_json(text)
    s = out["sample"]
    assert s["rsrq_db"] is None and s["rsrp_dbm"] == -95.0 and "rsrq_db" in s["out_of_range"]


def test_wimax_rssi_of_plus_10_dbm():
    s = wimax.parse_sample("RSSI: 10   CINR: 12.5   TX Power: 20   Frequency: 2345000\n")
    assert s is not None and s.rssi_dbm is None and s.cinr_db == 12.5 and "rssi_dbm" in s.out_of_range


# ---- every parsed number within its range, whatever the input (Hypothesis) -------------------------

def _samples(value, tech=None):
    """Every RadioSample dict in a parser's output, with the technology its ranges are judged by."""
    if isinstance(value, dict):
        if "out_of_range" in value and "secondary" in value:
            yield value
            for leg in value.get("secondary") or ():
                yield leg
            return
        for v in value.values():
            yield from _samples(v)
    elif isinstance(value, list):
        for v in value:
            yield from _samples(v)


def _in_ranges(kind: str, text: str) -> None:
    try:
        out = parse(kind, text)
    except ParseError:
        return
    for s in _samples(out):
        for name in RANGES:
            v = s.get(name)
            if v is None:
                continue
            r = range_of(name, s.get("technology"))
            assert within(v, r.lo, r.hi, r.integral) == v, f"{kind}: {name}={v!r} ({s.get('technology')})"
        assert band_ok(s.get("band")), f"{kind}: band {s.get('band')!r}"
        assert all(n in RANGES or n == "band" for n in s["out_of_range"])


NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
WILD = st.one_of(st.integers(-10 ** 9, 10 ** 9).map(str), st.integers(-1000, 1000).map(str),
                 st.floats(-1e7, 1e7, allow_nan=False).map(lambda x: f"{x:.2f}"),
                 st.sampled_from(["-32768", "32767", "65535", "255", "99", "-1", "0", "504", "1008", "2147483647",
                                  "4294967295", "-200", "300", "9" * 19]))


@st.composite
def wild_numbers(draw: st.DrawFn, samples: list[str]) -> str:
    """A real sample with some of its numbers replaced by arbitrary ones (in a tool's range of printing)."""
    text = draw(st.sampled_from(samples))
    spans = [m.span() for m in NUMBER.finditer(text)]
    if not spans:
        return text
    picked = sorted(set(draw(st.lists(st.integers(0, len(spans) - 1), min_size=1, max_size=8))), reverse=True)
    for i in picked:
        a, b = spans[i]
        text = text[:a] + draw(WILD) + text[b:]
    return text


FUZZ = settings(max_examples=max(EXAMPLES, 60), deadline=timedelta(seconds=10), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much, HealthCheck.large_base_example])


@pytest.mark.parametrize("kind", KINDS)
def test_fuzz_every_number_within_its_range(kind):
    samples = [s for s in modem_seeds(kind) if NUMBER.search(s)] or modem_seeds(kind)
    strategy = st.one_of(wild_numbers(samples), adversarial(samples), absurd_numbers(samples))

    @FUZZ
    @given(strategy)
    def run(text: str) -> None:
        _in_ranges(kind, text)

    run()


@pytest.mark.parametrize("kind", KINDS)
def test_every_number_of_every_sample_made_out_of_range(kind):
    """Deterministic sweep beside the fuzz: each number of each sample (up to 60 per sample), in turn,
    replaced by values just past the ranges' ends and far beyond them."""
    refused = 0
    for text in modem_seeds(kind)[:12] + modem_seeds(kind)[-4:]:
        spans = [m.span() for m in NUMBER.finditer(text)]
        for a, b in spans[::max(1, len(spans) // 60)]:
            for rep in ("-157", "41", "1008", "262144", "3279166", "-1", "101", "99999999", "1e5"):
                t = text[:a] + rep + text[b:]
                _in_ranges(kind, t)
                try:
                    refused += sum(len(s["out_of_range"]) for s in _samples(parse(kind, t)))
                except ParseError:
                    pass
    assert refused > 0, f"{kind}: no value of the sweep was refused: the sweep did not reach a sample"


def test_gpsd_tpv_off_the_globe_is_refused_not_clamped():
    from nodes.modem import gps
    for bad in ({"lat": 200.0, "lon": 10.0}, {"lat": 45.0, "lon": -180.5}, {"lat": 45.0, "lon": 7.0, "track": 361.0}):
        with pytest.raises(ParseError):
            gps.tpv({"class": "TPV", "mode": 2, **bad})
    fix = gps.tpv({"class": "TPV", "mode": 2, "lat": -90.0, "lon": 180.0, "track": 0.0})
    assert (fix.lat, fix.lon, fix.track_deg) == (-90.0, 180.0, 0.0)
    out = parse("gpsd", '{"class":"TPV","mode":2,"lat":45.0,"lon":7.0}\n{"class":"TPV","mode":2,"lat":91.0,"lon":7.0}\n'
                        '{"class":"TPV","mode":2,"lat":45.1,"lon":7.1}\n')
    assert [f["lat"] for f in out["tpv"]] == [45.0, 45.1] and "lat" in out["errors"][0]["error"]


def test_the_parse_schema_declares_the_ranges():
    """`ctl parse`'s shipped schema carries the ranges (the widest over the technologies): a script can
    rely on them, and tests/unit/controller/test_parse_schema.py holds every recorded output to them."""
    import jsonschema

    from controller.cli.common import envelope
    from controller.schemas import OUTPUT_DIR
    schema = json.loads((OUTPUT_DIR / "parse.schema.json").read_text())
    props = schema["$defs"]["RadioSample"]["properties"]
    for name in RANGES:
        r = range_of(name, None) if not isinstance(RANGES[name], dict) else None
        bounds = next(s for s in props[name]["anyOf"] if s["type"] != "null")
        if r is not None:
            assert (bounds["minimum"], bounds["maximum"]) == (r.lo, r.hi), name
    assert next(s for s in props["pci"]["anyOf"] if s["type"] != "null")["maximum"] == 1007
    doc = envelope(parse("at", '+QENG: "servingcell","NOCONN","LTE","FDD",460,01,5F1EA15,12,1650,3,5,5,DE10,-100,'
                               '-12,-68,10\nOK\n'), command="parse at")
    v = jsonschema.Draft202012Validator(schema)
    assert list(v.iter_errors(doc)) == []
    doc["data"]["sample"]["rsrp_dbm"] = 300.0
    assert list(v.iter_errors(doc)) != []


def _gps_in_ranges(text: str) -> None:
    from nodes.modem.gps import POSITION
    try:
        out = parse("gpsd", text)
    except ParseError:
        return
    for fix in out["tpv"] + ([out["fix"]] if out["fix"] else []):
        for key, name in (("lat", "lat"), ("lon", "lon"), ("track", "track_deg")):
            v = fix[name]
            lo, hi = POSITION[key]
            assert v is None or lo <= v <= hi, f"gpsd: {name}={v!r}"


def test_fuzz_gpsd_positions_on_the_globe():
    tpv = ('{"class":"TPV","device":"/dev/ttyACM0","mode":3,"time":"2026-01-01T00:00:0%d.000Z","lat":51.5%d,'
           '"lon":-0.12,"alt":10.0,"track":120.5,"speed":3.2}')
    fixes = "\n".join(tpv % (i, i) for i in range(3))
    samples = [s for s in seeds("gpsd") if NUMBER.search(s)] + [fixes]

    @FUZZ
    @given(st.one_of(wild_numbers([fixes]), wild_numbers(samples), absurd_numbers(samples)))
    def run(text: str) -> None:
        _gps_in_ranges(text)

    run()
