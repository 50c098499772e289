"""tc -j [-s] qdisc show parser, on real output generated in tests/fixtures/generated/tc/."""
from __future__ import annotations

import json
import re

import pytest

from controller.errors import ParseError
from controller.parsers import parse as registry_parse
from controller.parsers import tc
from tests.support.fixture_blocks import TC_GENERATED

DEV = "tcfx0"


def raw(name: str) -> str:
    return (TC_GENERATED / name).read_text()


def load(name: str) -> list[tc.Qdisc]:
    return tc.parse(raw(name), dev=DEV)


TBF_20M = {"rate_bps": 20_000_000, "burst_bytes": 32767, "lat_us": 27853}


def test_every_generated_json_file_parses():
    names = sorted(p.name for p in TC_GENERATED.glob("*.json"))
    assert len(names) == 19
    for name in names:
        qdiscs = load(name)
        assert qdiscs, name
        assert all((q.stats is not None) == (".s." in name) for q in qdiscs), name


def test_default_noqueue():
    (q,) = load("01_default.json")
    assert q == tc.Qdisc(kind="noqueue", handle="0:", parent=None, root=True, dev=DEV, refcnt=2, options={},
                         options_raw={}, stats=None)
    (s,) = load("01_default.s.json")
    assert s.stats == tc.QdiscStats(bytes=0, packets=0, drops=0, overlimits=0, requeues=0, backlog_bytes=0, qlen=0)
    assert load("06_after_delete.s.json") == load("01_default.s.json")


def test_all_devices_listing_carries_dev():
    lo, veth = tc.parse(raw("01_default.all.s.json"))
    assert (lo.dev, lo.kind, veth.dev, veth.kind) == ("lo", "noqueue", DEV, "noqueue")
    qs = tc.parse(raw("02_tbf_pfifo.all.s.json"))
    assert [(q.dev, q.kind, q.handle, q.parent) for q in qs] == [
        ("lo", "noqueue", "0:", None), (DEV, "tbf", "1:", None), (DEV, "pfifo", "10:", "1:1")]
    assert tc.root_qdisc(qs, DEV).kind == "tbf"
    with pytest.raises(ParseError, match="pass dev="):
        tc.root_qdisc(qs)


def test_tbf_with_pfifo_child_rate_is_bytes_per_second_in_json():
    tbf, pfifo = load("02_tbf_pfifo.fresh.json")
    assert (tbf.kind, tbf.handle, tbf.parent, tbf.root, tbf.refcnt) == ("tbf", "1:", None, True, 3)
    assert tbf.options_raw == {"rate": 2500000, "burst": 32767, "lat": 27853}   # 20mbit printed as B/s
    assert tbf.options == TBF_20M and tbf.rate_bps == 20_000_000
    assert (pfifo.kind, pfifo.handle, pfifo.parent, pfifo.root, pfifo.refcnt) == ("pfifo", "10:", "1:1", False, None)
    assert pfifo.options == {"limit_packets": 50}
    assert tc.root_qdisc([tbf, pfifo]) is tbf
    assert tc.children([tbf, pfifo], "1:") == [pfifo]
    assert all(q.stats.packets == 0 for q in load("02_tbf_pfifo.fresh.s.json"))


def test_tbf_pfifo_stats_after_and_during_traffic():
    tbf, pfifo = load("02_tbf_pfifo.s.json")
    assert tbf.stats == tc.QdiscStats(bytes=7587362, packets=5441, drops=0, overlimits=12124, requeues=0,
                                      backlog_bytes=0, qlen=0)
    assert (pfifo.stats.bytes, pfifo.stats.packets, pfifo.stats.overlimits) == (7587362, 5441, 0)
    tbf, pfifo = load("02_tbf_pfifo.s.during_traffic.json")
    assert (tbf.stats.backlog_bytes, tbf.stats.qlen, pfifo.stats.qlen) == (70030, 47, 47)
    assert pfifo.stats.qlen <= pfifo.options["limit_packets"]


def test_json_agrees_with_the_text_form_of_the_same_moment():
    text = raw("02_tbf_pfifo.s.txt")
    tbf, pfifo = load("02_tbf_pfifo.s.json")
    assert "rate 20Mbit burst 32Kb lat 27.9ms" in text and "limit 50p" in text
    sent = [tuple(map(int, m)) for m in re.findall(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", text)]
    assert sent == [(q.stats.bytes, q.stats.packets, q.stats.drops, q.stats.overlimits) for q in (tbf, pfifo)]
    with pytest.raises(ParseError, match="-j"):
        tc.parse(text)


def test_tbf_with_bfifo_child_drops():
    tbf, bfifo = load("03_tbf_bfifo.s.json")
    assert tbf.options == TBF_20M
    assert (bfifo.kind, bfifo.options, bfifo.options_raw) == ("bfifo", {"limit_bytes": 65536}, {"limit": 65536})
    assert bfifo.stats.drops == tbf.stats.drops == 31098   # tbf counts its child's drops
    assert (tbf.stats.bytes, tbf.stats.packets, tbf.stats.overlimits) == (7578251, 5433, 43177)
    assert [q.options for q in load("03_tbf_bfifo.json")] == [TBF_20M, {"limit_bytes": 65536}]


def test_tbf_1gbit_without_child():
    (q,) = load("04_tbf_1gbit.s.json")
    assert q.options == {"rate_bps": 1_000_000_000, "burst_bytes": 262125, "lat_us": 50000}
    assert q.options_raw["rate"] == 125_000_000
    assert (q.stats.bytes, q.stats.packets, q.stats.overlimits, q.stats.drops) == (53914358, 36532, 74, 0)
    assert tc.children([q], "1:") == []


def test_htb_foreign_root():
    (q,) = load("05_htb.s.json")
    assert (q.kind, q.handle, q.root) == ("htb", "1:", True)
    assert q.options_raw == {"r2q": 10, "default": "0x10", "direct_packets_stat": 0, "direct_qlen": 1000}
    assert q.options == {"r2q": 10, "default": 0x10, "direct_packets_stat": 0, "direct_qlen": 1000}
    assert q.rate_bps is None
    assert (q.stats.bytes, q.stats.packets, q.stats.overlimits) == (3807059, 2902, 2883)


def test_ingress_next_to_tbf():
    tbf, ingress = load("07_tbf_and_ingress.s.json")
    assert (ingress.kind, ingress.handle, ingress.parent, ingress.root, ingress.ingress) == (
        "ingress", "ffff:", "ffff:fff1", False, True)
    assert not tbf.ingress and tc.root_qdisc([tbf, ingress]) is tbf
    assert tbf.stats.packets == 5440 and ingress.stats.packets == 0


def _mutated(name: str, change) -> str:
    doc = json.loads(raw(name))
    change(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("text", [
    "",
    "\n",
    "qdisc noqueue 0: root refcnt 2\n",
    "[{",
    '{"kind": "tbf"}',
    "[1]",
    '[{"handle": "1:"}]',
    _mutated("02_tbf_pfifo.json", lambda d: d[0]["options"].__setitem__("rate", "20Mbit")),   # not 6.1's number
    _mutated("02_tbf_pfifo.json", lambda d: d[0]["options"].__setitem__("burst", 32767.5)),
    _mutated("02_tbf_pfifo.json", lambda d: d[1]["options"].__setitem__("limit", True)),
    _mutated("05_htb.json", lambda d: d[0]["options"].__setitem__("default", 16)),              # 6.1 prints "0x10"
    _mutated("05_htb.json", lambda d: d[0]["options"].__setitem__("default", "0xzz")),
    _mutated("02_tbf_pfifo.s.json", lambda d: d[0].pop("qlen")),
    _mutated("02_tbf_pfifo.s.json", lambda d: [d[1].pop(k) for k in tc._STAT_KEYS]),
    _mutated("02_tbf_pfifo.json", lambda d: d[0].__setitem__("options", [])),
    _mutated("02_tbf_pfifo.json", lambda d: d[1].__setitem__("parent", 1)),
])
def test_malformed_input_raises_parse_error(text):
    with pytest.raises(ParseError):
        tc.parse(text)


def test_unknown_kinds_and_keys_are_kept_as_printed():
    text = '[{"kind":"fq_codel","handle":"0:","parent":"1:1","options":{"limit":10240,"target":4999},"offloaded":false}]'
    (q,) = tc.parse(text)
    assert q.options == q.options_raw == {"limit": 10240, "target": 4999}
    assert q.extra == {"offloaded": False} and q.dev is None


def test_registry_round_trip():
    out = json.loads(json.dumps(registry_parse("tc-qdisc", raw("02_tbf_pfifo.s.json"))))
    assert out[0]["options"] == TBF_20M
    assert out[0]["stats"]["overlimits"] == 12124
    assert out[1]["options"] == {"limit_packets": 50} and out[1]["ingress"] is False
    with pytest.raises(ParseError):
        registry_parse("tc-qdisc", raw("02_tbf_pfifo.s.txt"))
