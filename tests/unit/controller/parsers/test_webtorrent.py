"""controller.parsers.webtorrent on the recorded real output of webtorrent-cli 6.0.1 and
bittorrent-tracker 11.2.3 (tests/fixtures/recorded/generated/webtorrent, fixture 06) and on the
leecher output of our own recorded runs (time-stamped lines)."""
from __future__ import annotations


import pytest

from controller.errors import ParseError
from controller.parsers import parse
from controller.parsers.webtorrent import parse_client, parse_info, parse_tracker, progress, size_bytes
from tests.support.shipped import ROOT

WT = ROOT / "tests" / "fixtures" / "recorded" / "generated" / "webtorrent"
RUNS = ROOT / "tests" / "fixtures" / "generated" / "runs" / "mptcp-bittorrent"
IH = "a2465951e1295eb4ea1eae767e130f0446e03fb6"


def text(name: str) -> str:
    return (WT / name).read_text()


@pytest.mark.parametrize("s, n", [("0 B", 0), ("5.5 KB", 5500), ("2.1 MB", 2_100_000), ("12 MB", 12_000_000),
                                  ("1.9 MB", 1_900_000), ("119 B", 119), ("3.8 GB", 3_800_000_000)])
def test_prettier_bytes_are_base_1000(s, n):
    assert size_bytes(s) == n


def test_bad_size():
    with pytest.raises(ParseError):
        size_bytes("12 MiB")


def test_leecher_frames_and_completion():
    out = parse_client(text("leecher.stdout.txt"))
    assert out.metadata_fetch and out.exiting and not out.errors
    assert out.info_hash == IH
    assert out.done == {"active": 1, "peers": 1, "seconds": 5}
    assert [f.status for f in out.frames] == ["Downloading"] * 5
    f = out.frames[0]
    assert (f.name, f.downloaded, f.total, f.uploaded, f.unchoked, f.peers) == \
        ("payload.bin", 2_100_000, 12_000_000, 5500, 1, 1)
    assert f.speed_bps == 1.8e6 * 8 and f.remaining == "a few seconds" and f.running_time == "1 seconds"
    row = f.peer_rows[0]
    assert (row.progress, row.type, row.addr, row.downloaded) == ("S", "UTPOUT", "127.0.0.1:6881", 2_100_000)
    assert row.download_bps == 1.9e6 * 8 and row.upload_bps == 0
    assert [fr.downloaded for fr in out.frames] == [2_100_000, 4_200_000, 6_200_000, 8_300_000, 10_000_000]
    assert out.peer_types == ["UTPOUT"]


def test_seeder_frames():
    out = parse_client(text("seeder.stdout.txt"))
    assert {f.status for f in out.frames} == {"Seeding"}
    assert out.magnet.startswith(f"magnet:?xt=urn:btih:{IH}&dn=payload.bin&tr=http%3A%2F%2F127.0.0.1%3A8000")
    assert out.peer_types == ["UTPIN"] and out.done is None
    assert max(f.uploaded for f in out.frames) == 12_000_000


def test_fast_leecher_prints_no_frame():
    out = parse_client((WT / "run2" / "leecher.out").read_text())
    assert out.frames == [] and out.done == {"active": 1, "peers": 1, "seconds": 0} and out.exiting


def test_verbose_keep_seeding_rows_with_piece_lists():
    out = parse_client(text("leecher_verbose_keepseeding.stdout.txt"))
    assert out.done["seconds"] == 2
    assert {f.status for f in out.frames} == {"Downloading", "Seeding"}
    assert all(r.addr == "127.0.0.1:6881" for f in out.frames for r in f.peer_rows)


def test_quiet_outputs():
    assert parse_client(text("leecher_quiet.stdout.txt")).frames == []
    assert parse_client(text("leecher_quiet.stdout.txt")).exiting
    assert parse_client(text("seeder_quiet.stdout.txt")).info_hash == IH


def test_errors_are_on_stdout():
    out = parse_client(text("error_seed_noargs.txt"))
    assert out.errors == ["Not enough non-option arguments: got 0, need at least 1"] and out.unexpected_error


def test_tty_capture_after_stripping_ansi():
    out = parse_client((WT / "run2" / "leecher_tty.typescript").read_text())
    assert out.done == {"active": 1, "peers": 1, "seconds": 0}


def test_tracker_log():
    t = parse_tracker(text("tracker.stdout.txt"))
    assert t.urls["HTTP tracker"] == "http://127.0.0.1:8000/announce"
    assert t.urls["UDP tracker"] == "udp://0.0.0.0:8000"       # the 11.2.3 bind bug, recorded as printed
    assert [e["event"] for e in t.events][:4] == ["start", "complete", "start", "stop"]
    assert t.events[0] == {"time": "2026-11-22T02:26:24.748Z", "event": "start", "addr": "127.0.0.1:6881"}
    assert t.peers("complete") == ["127.0.0.1:6881", "127.0.0.1:6884"]
    # older releases print the events without a time stamp
    assert parse_tracker("start: 10.0.0.1:6881\n").events == [{"time": None, "event": "start", "addr": "10.0.0.1:6881"}]


def test_info_json():
    raw = text("create_info.txt")
    info = parse_info(raw[raw.index("{"):raw.rindex("}") + 1])       # the JSON `webtorrent info` printed
    assert (info["info_hash"], info["name"], info["length"], info["piece_length"]) == \
        (IH, "payload.bin", 12_000_000, 16384)
    assert info["pieces"] == 733                                     # 12 000 000 / 16384, rounded up
    assert info["announce"] == ["http://127.0.0.1:8000/announce"]
    with pytest.raises(ParseError, match="no 40-hex infoHash"):
        parse_info('{"name": "x"}')


def test_own_run_info_and_time_stamped_progress():
    info = parse_info((RUNS / "bittorrent-local" / "raw" / "ns1" / "webtorrent-info.json").read_text())
    assert info["length"] == 20 * 2**20 and info["announce"] == ["http://10.21.0.11:6969/announce"]
    lines = []
    for l in (RUNS / "bittorrent-global" / "raw" / "ns2" / "webtorrent-leecher-tcp-1.txt").read_text().splitlines():
        t, _, rest = l.partition(" ")
        lines.append((float(t), rest))
    prog = progress(lines)
    assert len(prog) >= 30                                         # one frame a second for ~44 s
    assert [b for _, b in prog] == sorted(b for _, b in prog)       # bytes never go back
    assert all(b <= 21_000_000 for _, b in prog)                    # 20 MiB printed as at most "21 MB"
    out = parse_client("\n".join(l for _, l in lines))
    assert out.peer_types == ["TCPOUT"] and out.peer_addrs == ["10.30.0.1:6881"]   # TCP to the NAT's address


def test_ctl_parse_kind_detects_the_format():
    assert parse("webtorrent", text("tracker.stdout.txt"))["kind"] == "tracker"
    assert parse("webtorrent", text("leecher.stdout.txt"))["done"]["seconds"] == 5
    assert parse("webtorrent", (RUNS / "bittorrent-local" / "raw" / "ns1" / "webtorrent-info.json").read_text()
                 )["info_hash"]
