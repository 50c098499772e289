"""The field logger counts the lines of ping, iperf3 and webtorrent it did not understand (issue 27 area).

Contract (nodes/fieldlog/parsers.py Unread, ping_other, iperf3_other, WebtorrentFrames.understood;
sources.py take_unread; logger.py): a line that is neither data nor one of the tool's known other lines
(headers, totals, separators) is counted per source; the first five are kept, control and format
characters removed, at most 160 characters; every second's `field` point carries the count since the
last second (`ping_unparsed_lines`, `workload_unparsed_lines`) and each kept line becomes an
`unparsed-line` event; the field report sums them per tool under `refused_inputs.unparsed_lines`.
Every line of the recorded real outputs is understood (a normal run counts 0); the garbage lines below
are shaped as real ones: iputils' own warnings and errors, iperf3's error and warning messages, the
`Warning:` lines webtorrent-cli writes on stderr (recorded in
tests/fixtures/recorded/generated/webtorrent/leecher_verbose_keepseeding.stdout.txt), numbers no tool prints,
a line cut in the middle, escape sequences and bidi controls.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import jsonschema

from controller.field.stats import render_report, report_data
from controller.schemas.rack_outputs import RefusedInputs
from controller.telemetry.points import Point
from nodes.fieldlog import parsers
from nodes.fieldlog import points as P
from nodes.fieldlog import sources as S
from nodes.fieldlog.logger import FieldLogger, Sources
from tests.support.shipped import ROOT

RECORDED = ROOT / "tests" / "fixtures"
FIELD_RAW = RECORDED / "generated" / "field" / "iperf3-m2" / "raw" / "m2" / "raw"
WEBTORRENT = RECORDED / "recorded" / "generated" / "webtorrent"

PING_GARBAGE = [
    "WARNING: kernel is not very fresh, upgrade is recommended.",                    # iputils on an old kernel
    "ping: wwan0: Network is down",                                                   # not a send error shape
    "[1795744591.715656] 64 bytes from 10.2.0.21: icmp_seq=7 ttl=64 time=1e999 ms",  # a number ping never prints
    "[1795744591.7156",                                                               # a line cut in the middle
    "\x1b[31m64 bytes\x1b[0m from \u202e12.0.2.01: icmp_seq=8\x00 ttl=64",            # escapes, bidi, NUL
]
IPERF3_GARBAGE = [
    "iperf3: error - unable to connect to server - server may have restarted or been killed",
    "warning: Ignoring nonsense TCP MSS 0",
    "[  5]   1.00-2.00   sec  1.2.3 KBytes  1048 Kbits/sec",
]
WEBTORRENT_GARBAGE = [
    "Warning: addMembership ENODEV",
    "Speed: 1e999 MB/s Downloaded: 2.1 MB/12 MB Uploaded: 5.5 KB",
    "Error: Invalid torrent identifier",
]


def _tool_lines(raw_log: Path) -> list[str]:
    """The tool's lines of a logger raw log (`<ns> <line>`), without the logger's own `(started ...)` notes."""
    out = []
    for line in raw_log.read_text().splitlines():
        text = line.split(" ", 1)[1] if " " in line else ""
        if not text.startswith("("):
            out.append(text)
    return out


def test_every_line_of_the_recorded_outputs_is_understood():
    ping = _tool_lines(FIELD_RAW / "ping.log") + [
        line for f in sorted((RECORDED / "generated" / "ping").glob("ping_[cqu]*.txt")) for line in f.read_text().splitlines()]
    assert len(ping) > 100
    assert [l for l in ping if parsers.parse_ping_line(l) is None and not parsers.ping_other(l)] == []
    iperf3 = _tool_lines(FIELD_RAW / "workload.log") + \
        (RECORDED / "recorded" / "generated" / "iperf3_tcp_P2_text.client.txt").read_text().splitlines()
    assert [l for l in iperf3 if parsers.parse_iperf3_interval(l) is None and not parsers.iperf3_other(l)] == []
    frames = parsers.WebtorrentFrames()
    not_understood = []
    for name in ("leecher.stdout.txt", "seeder.stdout.txt", "leecher_verbose_keepseeding.stdout.txt"):
        for line in (WEBTORRENT / name).read_text().splitlines():
            frames.feed(line)
            if not frames.understood:
                not_understood.append(line)
    # that capture had webtorrent's stderr merged into stdout: its two console.warn lines are not frame lines
    assert not_understood == ["Warning: addMembership ENODEV", "Warning: No nodes to query"]


def test_unread_counts_keeps_the_first_five_printable_and_short():
    u = parsers.Unread()
    for line in PING_GARBAGE + ["x" * 5000, "seventh"]:
        u.add(line)
    n, first = u.take()
    assert n == 7 and [i for i, _ in first] == [1, 2, 3, 4, 5]
    assert first[4][1] == "[31m64 bytes[0m from 12.0.2.01: icmp_seq=8 ttl=64"     # ESC, U+202E, NUL gone
    assert u.take() == (0, [])
    u.add("y" * 5000)
    n, first = u.take()
    assert n == 1 and first == []                                               # only the first five are kept
    assert parsers.printable("a\tb" + "z" * 300, 160) == "a b" + "z" * 154 + "..."
    assert len(parsers.printable("\u200f" * 10000 + "ok", 160)) <= 160            # bounded work, bounded text


def _replaying(source: S.ChildLoop, lines: list[str], tmp: Path) -> None:
    """The tool replaced by a process printing `lines` (the real ping / iperf3 / webtorrent print them)."""
    f = tmp / f"{source.name}-{len(list(tmp.glob('*.out')))}.out"
    f.write_bytes("".join(l + "\n" for l in lines).encode())
    source.argv = [sys.executable, "-c", "import sys\nsys.stdout.buffer.write(open(sys.argv[1], 'rb').read())\n",
                   str(f)]


def _wait_exit(loop: S.ChildLoop, n: int = 1) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and loop.exits < n:
        time.sleep(0.02)
    assert loop.exits >= n


def test_the_sources_count_what_their_tool_printed_and_they_did_not_understand(tmp_path):
    """Real processes printing the recorded lines with the garbage among them, read by the logger's own
    sources: the data still counts, and only the garbage is counted as not understood (per source)."""
    ping = S.PingSource("10.2.0.21", raw_path=str(tmp_path / "ping.log"), backoff_s=(60, 60))
    _replaying(ping.loop, _tool_lines(FIELD_RAW / "ping.log")[:10] + PING_GARBAGE, tmp_path)
    iperf = S.WorkloadRunner({"kind": "iperf3", "server": "10.135.0.1"}, str(tmp_path / "w.log"), backoff_s=(60, 60))
    _replaying(iperf.loop, _tool_lines(FIELD_RAW / "workload.log")[:12] + IPERF3_GARBAGE, tmp_path)
    wt = S.WorkloadRunner({"kind": "torrent", "torrent": "x.torrent", "out": str(tmp_path)}, str(tmp_path / "t.log"))
    _replaying(wt.loop, WEBTORRENT_GARBAGE + (WEBTORRENT / "leecher.stdout.txt").read_text().splitlines(), tmp_path)
    for s in (ping, iperf, wt):
        s.start()
    for s in (ping, iperf, wt):
        _wait_exit(s.loop)
        s.stop()
    assert ping.take()["ping_replies"] == 9
    n, first = ping.take_unread()
    assert n == 5 and [line for _, line in first] == [parsers.printable(l, 160) for l in PING_GARBAGE]
    assert iperf.take()["dl_bytes"] > 0 and iperf.tool == "iperf3"
    n, first = iperf.take_unread()
    assert n == 3 and first[0] == (1, IPERF3_GARBAGE[0])
    assert wt.take()["peers_active"] == 1 and wt.tool == "webtorrent"
    assert wt.take_unread() == (3, [(i + 1, l) for i, l in enumerate(WEBTORRENT_GARBAGE)])


def test_a_line_over_the_reader_bound_is_counted_too(tmp_path):
    ping = S.PingSource("10.2.0.21", raw_path=None, backoff_s=(60, 60))
    _replaying(ping.loop, ["\u00e9" * (S.MAX_LINE + 10)], tmp_path)
    ping.start()
    _wait_exit(ping.loop)
    ping.stop()
    n, first = ping.take_unread()
    assert n == 1 and first[0][1].startswith(f"(a line over {S.MAX_LINE} bytes, dropped) \u00e9")


class _Counted:
    """A source as the tick sees it: `take_unread` answers what a real source counted (tests above)."""

    def __init__(self, tool: str, takes: list[tuple[int, list[tuple[int, str]]]]):
        self.tool, self.takes = tool, takes

    def take(self):
        return {}

    def take_unread(self):
        return self.takes.pop(0) if self.takes else (0, [])


def test_the_tick_writes_the_counts_and_events_and_the_report_sums_them():
    """The logger's tick turns the sources' counts into each second's `field` point and the kept lines into
    `unparsed-line` events; the field report (controller/field/stats.py) sums them per tool, keeps the first
    five, and validates against the field report's schema model."""
    lg = FieldLogger.__new__(FieldLogger)
    lg.base = {"run": "r1", "scenario": "field", "host": "m1"}
    ping = _Counted("ping", [(2, [(1, "WARNING: kernel is not very fresh"), (2, "ping: wwan0: Network is down")]),
                     (0, []), (4, [(3, "a"), (4, "b"), (5, "c")])])
    work = _Counted("webtorrent", [(1, [(1, "Warning: addMembership ENODEV")])])
    recs = []
    for k in range(3):
        counts, events = lg._unparsed(k, 1_795_744_591_000_000_000 + k * 10**9, Sources(ping=ping, workload=work))
        recs.append(P.field_record(k, 1_795_744_591_000_000_000 + k * 10**9, dict(lg.base, workload="torrent"),
                                   "torrent", modem_ok=None, ping={}, gps=None, work={}, unparsed=counts))
        recs += events
    field = [r["f"] for r in recs if r["m"] == "field"]
    assert [(f["ping_unparsed_lines"], f["workload_unparsed_lines"]) for f in field] == [(2, 1), (0, 0), (4, 0)]
    evs = [r for r in recs if r["m"] == "field_event"]
    assert [(e["tags"]["event"], e["f"]["source"], e["f"]["n"]) for e in evs][:3] == [
        ("unparsed-line", "ping", 1), ("unparsed-line", "ping", 2), ("unparsed-line", "webtorrent", 1)]
    points = [Point(r["m"], r["tags"], r["f"], r["t"]) for r in recs]
    refused = report_data(points)["refused_inputs"]["m1"]
    assert refused["unparsed_lines"] == {
        "ping": {"lines": 6, "first": ["WARNING: kernel is not very fresh", "ping: wwan0: Network is down", "a", "b", "c"]},
        "webtorrent": {"lines": 1, "first": ["Warning: addMembership ENODEV"]}}
    RefusedInputs.model_validate(refused)
    jsonschema.validate(refused, RefusedInputs.model_json_schema())
    text = render_report(report_data(points))
    assert "           6 ping lines not understood: WARNING: kernel is not very fresh | ping: wwan0: Network is down" \
           in text, text


def test_the_export_describes_the_counts():
    """`ctl runs export` writes refused_inputs as a table: unparsed_lines.<tool>.lines and .first are described
    in the data dictionary (controller/results/columns.py), the count with its unit."""
    from controller.results import columns
    from controller.results.export import summary_rows
    refused = {"m1": {"gps_reports_skipped": None, "radio_values_out_of_range": 0, "radio_samples_flagged": 0,
                      "unparsed_lines": {"ping": {"lines": 6, "first": ["a", "b"]},
                                         "webtorrent": {"lines": 1, "first": ["Warning: addMembership ENODEV"]}}}}
    _run, tables = summary_rows({"refused_inputs": refused})
    cols = [c for _name, row in tables["refused_inputs"] for c in row if c.startswith("unparsed_lines.")]
    assert sorted(cols) == ["unparsed_lines.ping.first", "unparsed_lines.ping.lines", "unparsed_lines.webtorrent.first",
                            "unparsed_lines.webtorrent.lines"]
    got = {c: columns.describe("refused_inputs", c, "field", {}) for c in cols}
    assert got["unparsed_lines.ping.lines"][0] == "count" and "ping's output" in got["unparsed_lines.ping.lines"][1]
    assert all(d is not None and d[1] for d in got.values())
