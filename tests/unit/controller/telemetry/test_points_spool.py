"""controller.telemetry.points (line protocol) and controller.telemetry.spool (exactly-once push).

Line protocol follows InfluxDB's rules: measurement escapes commas and spaces; tag keys,
tag values and field keys escape commas, equals signs and spaces; string field values are
double-quoted with `"` and `\\` escaped; integers carry an `i`; NaN/inf cannot be stored and
are left out; empty tag values are dropped; a point without fields is no line at all.

Exactly once (spool module doc): the offset in metrics.influx.json only moves after the
sender returned (InfluxDB acknowledged); a batch whose acknowledgement was lost is sent
again with the very same points, which InfluxDB stores once (same measurement, tag set,
field and timestamp). `RecordingSender` below is a plain fake of InfluxSender.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.telemetry.points import Point, dumps, to_line
from controller.telemetry.spool import (SPOOL_NAME, STATE_NAME, PushState, Spool, iter_points, pending_points,
                                        push_once, read_points)

T = 1_700_000_000_123_456_789


# ---- line protocol ---------------------------------------------------------------------------


def test_basic_line_sorted_tags_and_fields():
    p = Point("iface", {"link": "path1", "host": "br1", "iface": "pb"},
              {"tx_bytes": 1234, "rx_bps": 1.5e6, "up": True}, T)
    assert to_line(p) == f"iface,host=br1,iface=pb,link=path1 rx_bps=1500000.0,tx_bytes=1234i,up=true {T}"


def test_tag_escaping_spaces_commas_equals():
    p = Point("snmp_if", {"ifname": "Gi 1/0/1", "descr": "a,b", "k=v": "x=y"}, {"v": 1}, T)
    assert to_line(p) == f"snmp_if,descr=a\\,b,ifname=Gi\\ 1/0/1,k\\=v=x\\=y v=1i {T}"


def test_measurement_and_field_key_escaping():
    p = Point("my meas,x", {}, {"a b": 1, "c,d": 2, "e=f": 3}, T)
    assert to_line(p) == f"my\\ meas\\,x a\\ b=1i,c\\,d=2i,e\\=f=3i {T}"


def test_string_fields_quote_and_backslash():
    p = Point("mptcp_event", {"host": "a1"}, {"saddr": 'say "hi" \\ there', "plain": "x y,z=1"}, T)
    line = to_line(p)
    assert line == f'mptcp_event,host=a1 plain="x y,z=1",saddr="say \\"hi\\" \\\\ there" {T}'


def test_integers_floats_booleans():
    line = to_line(Point("m", {}, {"i": -3, "big": 2**40, "f": 0.25, "e": 1e-7, "t": True, "n": False}, T))
    assert line == f"m big=1099511627776i,e=1e-07,f=0.25,i=-3i,n=false,t=true {T}"


def test_nan_and_inf_fields_are_dropped():
    p = Point("m", {"h": "a"}, {"ok": 1.0, "nan": float("nan"), "inf": float("inf"), "ninf": float("-inf")}, T)
    assert to_line(p) == f"m,h=a ok=1.0 {T}"


def test_none_fields_are_dropped():
    assert to_line(Point("m", {}, {"a": None, "b": 2}, T)) == f"m b=2i {T}"  # type: ignore[dict-item]


def test_empty_tag_values_are_dropped():
    p = Point("subflow", {"host": "a1", "link": "", "flow": "mptcp"}, {"x": 1}, T)
    assert to_line(p) == f"subflow,flow=mptcp,host=a1 x=1i {T}"


@pytest.mark.parametrize("fields", [{}, {"nan": float("nan")}, {"a": None}])
def test_no_fields_is_no_line(fields):
    assert to_line(Point("m", {"h": "a"}, fields, T)) is None


def test_point_json_round_trip_and_key():
    p = Point("subflow", {"host": "a1", "flow": "mptcp"}, {"bytes_acked": 10, "rtt_ms": 1.5, "tok": "ab"}, T)
    assert Point.from_json(json.loads(dumps(p))) == p
    assert p.key() == ("subflow", (("flow", "mptcp"), ("host", "a1")), T)
    q = p.with_tags({"run": "r1", "host": "ignored"})
    assert q.tags == {"run": "r1", "host": "a1", "flow": "mptcp"}   # the point's own tags win


# ---- spool ---------------------------------------------------------------------------------


def pts(n: int, start: int = 0) -> list[Point]:
    return [Point("iface", {"host": "br1", "iface": "pb"}, {"tx_bytes": 1000 * i, "rate": i / 3},
                  T + i * 100_000_000) for i in range(start, start + n)]


def test_spool_append_and_read(tmp_path):
    sp = Spool(tmp_path / "run" / SPOOL_NAME)
    assert sp.append(pts(3)) == 3
    assert sp.append([]) == 0
    assert sp.append(pts(2, 3)) == 2
    sp.close()
    got, offset = read_points(tmp_path / "run" / SPOOL_NAME)
    assert got == pts(5)
    assert offset == (tmp_path / "run" / SPOOL_NAME).stat().st_size
    assert sp.count == 5
    assert list(iter_points(tmp_path / "run" / SPOOL_NAME)) == pts(5)


def test_spool_listeners_called_per_append(tmp_path):
    sp = Spool(tmp_path / SPOOL_NAME)
    calls = []
    sp.on_append(lambda: calls.append(1))
    sp.append(pts(2))
    sp.append([])
    sp.append(pts(1))
    sp.close()
    assert len(calls) == 2


def test_read_points_leaves_a_torn_last_line(tmp_path):
    path = tmp_path / SPOOL_NAME
    sp = Spool(path)
    sp.append(pts(2))
    sp.close()
    whole = dumps(pts(1, 2)[0]) + "\n"
    with open(path, "a") as f:
        f.write(whole[:17])                       # a writer died (or is) mid-line
    got, offset = read_points(path)
    assert got == pts(2)
    assert offset == path.stat().st_size - 17
    again, offset2 = read_points(path, offset)
    assert (again, offset2) == ([], offset)       # nothing complete yet: the offset stays
    with open(path, "a") as f:
        f.write(whole[17:])
    rest, offset3 = read_points(path, offset)
    assert rest == pts(1, 2) and offset3 == path.stat().st_size


def test_read_points_missing_file(tmp_path):
    assert read_points(tmp_path / "nope.jsonl", 42) == ([], 42)


# ---- PushState --------------------------------------------------------------------------------


def test_push_state_persistence(tmp_path):
    assert PushState.load(tmp_path) == PushState()
    st = PushState(offset=123, points=4, url="http://x:8086", bucket="ctl", last_error="E", last_push=1.5)
    st.save(tmp_path)
    assert PushState.load(tmp_path) == st
    assert json.loads((tmp_path / STATE_NAME).read_text())["offset"] == 123
    assert not (tmp_path / (STATE_NAME + ".tmp")).exists()


# ---- push_once: exactly once ----------------------------------------------------------------


class _Target:
    url = "http://influx.test:8086"
    bucket = "ctl"


class RecordingSender:
    """A fake InfluxSender: records every batch it is given, and stores points the way InfluxDB
    does (one point per measurement + tag set + timestamp; a re-sent point overwrites itself).

    fail_before: batch numbers (1-based, counting every send call) that fail before anything
    is stored (InfluxDB down). lose_ack: batch numbers that are stored, then fail (the
    acknowledgement never reached ctl)."""

    def __init__(self, fail_before=(), lose_ack=()):
        self.target = _Target()
        self.calls = 0
        self.batches: list[list[Point]] = []
        self.store: dict[tuple, dict] = {}
        self.fail_before, self.lose_ack = set(fail_before), set(lose_ack)

    def send(self, points: list[Point]) -> None:
        self.calls += 1
        if self.calls in self.fail_before:
            raise ConnectionError("influxdb down")
        self.batches.append(list(points))
        for p in points:
            k = p.key()
            assert self.store.get(k, p.fields) == dict(p.fields), "a re-sent point must be identical"
            self.store[k] = dict(p.fields)
        if self.calls in self.lose_ack:
            raise TimeoutError("acknowledgement lost")


def write_spool(run_dir: Path, points: list[Point]) -> list[int]:
    """Write points to the spool; returns the byte offset after each line."""
    sp = Spool(run_dir / SPOOL_NAME)
    ends = []
    for p in points:
        sp.append([p])
        sp._fh.flush()
        ends.append((run_dir / SPOOL_NAME).stat().st_size)
    sp.close()
    return ends


def check_contiguous(batches: list[list[Point]], all_points: list[Point]) -> None:
    """Offsets never skip: the batches, with re-sends removed, are the spool in order."""
    seen: list[Point] = []
    for b in batches:
        if seen[-len(b):] == b and len(b) <= len(seen):
            continue                                   # a re-send of the batch just before
        seen += b
    assert seen == all_points


def test_push_once_sends_everything_once(tmp_path):
    points = pts(40)
    write_spool(tmp_path, points)
    s = RecordingSender()
    sent, pending = push_once(tmp_path, s, batch_bytes=1000)
    assert (sent, pending) == (40, 0)
    assert len(s.batches) > 3                               # several batches
    assert [p for b in s.batches for p in b] == points     # each point exactly once, in order
    st = PushState.load(tmp_path)
    assert (st.offset, st.points) == ((tmp_path / SPOOL_NAME).stat().st_size, 40)
    assert (st.url, st.bucket, st.last_error) == ("http://influx.test:8086", "ctl", None)
    assert push_once(tmp_path, s, batch_bytes=1000) == (0, 0)   # nothing new: nothing sent
    assert pending_points(tmp_path) == 0


def test_push_once_failure_keeps_the_offset(tmp_path):
    points = pts(30)
    write_spool(tmp_path, points)
    s = RecordingSender(fail_before={3})
    with pytest.raises(ConnectionError):
        push_once(tmp_path, s, batch_bytes=1000)
    st = PushState.load(tmp_path)
    done = sum(len(b) for b in s.batches)
    assert 0 < done < 30 and st.points == done
    assert pending_points(tmp_path) == 30 - done
    sent, pending = push_once(tmp_path, s, batch_bytes=1000)
    assert (sent, pending) == (30 - done, 0)
    assert [p for b in s.batches for p in b] == points     # nothing lost, nothing twice
    check_contiguous(s.batches, points)


def test_push_once_lost_ack_resends_the_same_batch(tmp_path):
    points = pts(30)
    write_spool(tmp_path, points)
    s = RecordingSender(lose_ack={2})
    with pytest.raises(TimeoutError):
        push_once(tmp_path, s, batch_bytes=1000)
    offset_after_failure = PushState.load(tmp_path).offset
    assert offset_after_failure > 0
    push_once(tmp_path, s, batch_bytes=1000)
    # batch 2 was delivered twice, with identical points; InfluxDB holds each point once
    assert s.batches[1] == s.batches[2]
    assert len(s.store) == 30
    assert {p.key() for p in points} == set(s.store)
    check_contiguous(s.batches, points)
    st = PushState.load(tmp_path)
    assert st.offset == (tmp_path / SPOOL_NAME).stat().st_size
    assert st.points == 30              # acknowledged points: the lost-ack batch counted once


def test_push_once_offsets_land_on_line_boundaries(tmp_path):
    ends = write_spool(tmp_path, pts(25))
    s = RecordingSender(fail_before={2, 4, 6})
    offsets = []
    for _ in range(10):
        try:
            push_once(tmp_path, s, batch_bytes=700)
        except ConnectionError:
            pass
        offsets.append(PushState.load(tmp_path).offset)
        if offsets[-1] == ends[-1]:
            break
    assert offsets[-1] == ends[-1]
    assert all(o in [0, *ends] for o in offsets)
    assert offsets == sorted(offsets)                      # never backwards


def test_push_once_with_a_torn_last_line(tmp_path):
    write_spool(tmp_path, pts(5))
    with open(tmp_path / SPOOL_NAME, "a") as f:
        f.write('{"m":"iface","t":')
    s = RecordingSender()
    sent, pending = push_once(tmp_path, s)
    assert sent == 5
    assert [p for b in s.batches for p in b] == pts(5)
    assert pending_points(tmp_path) == 0                   # no complete point is waiting
    # the second value is documented as "points pending": a count, like pending_points()
    assert pending == pending_points(tmp_path)


def test_push_once_picks_up_points_appended_later(tmp_path):
    write_spool(tmp_path, pts(5))
    s = RecordingSender()
    push_once(tmp_path, s)
    sp = Spool(tmp_path / SPOOL_NAME)
    sp.append(pts(3, 5))
    sp.close()
    assert pending_points(tmp_path) == 3
    assert push_once(tmp_path, s) == (3, 0)
    assert [p for b in s.batches for p in b] == pts(8)


def test_push_once_without_spool(tmp_path):
    assert push_once(tmp_path, RecordingSender()) == (0, 0)
    assert pending_points(tmp_path) == 0
