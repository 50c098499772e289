"""Reservation times and notes are checked when booked and again when read (rows other
members wrote): finite, within the years 2000..9999, start before end, at most 31 days; notes
one line of printable text. A row that fails the check is shown as malformed and blocks
nothing (the reviewer's `Infinity` row gave an OverflowError traceback and blocked the rack
forever)."""
from __future__ import annotations

import math
import subprocess
import sys
import time

import pytest

from controller.errors import UsageError
from controller.inventory import load_inventory
from controller.labdb import connect
from controller.labdb.migrations import migrate
from controller.rack.reservations import (DatabaseBook, RackReserved, Reservation, check_free, check_new, others,
                                          time_problem)
from tests.support.shipped import ROOT, VIRTUAL

NOW = 1_750_000_000.0


@pytest.mark.parametrize("start, end, message", [
    (NOW, math.inf, "end is not a finite number"),
    (NOW, math.nan, "end is not a finite number"),
    (-math.inf, NOW, "start is not a finite number"),
    (NOW, 1e300, "outside the years 2000..9999"),
    (NOW, 253402300800.0, "outside the years 2000..9999"),          # 10000-01-01T00:00Z
    (NOW + 60, NOW, "--to must be after --from"),
    (NOW, NOW, "--to must be after --from"),
    (NOW, NOW + 31 * 86400 + 1, "more than 31 days"),
])
def test_bad_times_are_refused_in_one_line(start, end, message):
    with pytest.raises(UsageError, match=message) as e:
        check_new("lab-a", start, end, "", NOW - 1)
    assert "\n" not in str(e.value)


def test_good_times_pass():
    check_new("lab-a", NOW, NOW + 31 * 86400, "", NOW)
    check_new("lab-a", 253402300799.0 - 3600, 253402300799.0, "", NOW)   # up to 9999-12-31T23:59:59Z
    assert time_problem(NOW, NOW + 60) is None


@pytest.mark.parametrize("note", ["a\nb", "bell\x07", "del\x7f", "c1\x85next line", "csi\x9b31m",
                                  "rtl\u202eoverride", "isolate\u2066x\u2069", "ls\u2028"])
def test_notes_with_control_characters_are_refused(note):
    with pytest.raises(UsageError, match="one line of at most 200 printable characters"):
        check_new("lab-a", NOW, NOW + 60, note, NOW)


def test_a_note_that_is_not_text_is_refused():
    with pytest.raises(UsageError, match="--note is not valid text"):      # argv bytes that are not UTF-8
        check_new("lab-a", NOW, NOW + 60, "bad\udcff", NOW)


def test_a_plain_note_in_any_script_passes():
    check_new("lab-a", NOW, NOW + 60, "보정 측정 (calibration) — Ω ✓", NOW)


@pytest.fixture
def url(pg_url, tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CTL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("CTL_DATABASE_URL", pg_url)
    return pg_url


def _legacy_rows(url: str, rack: str, rows: list[tuple[float, float, str]]) -> None:
    """Rows as a member with psql (or an old ctl, before the database checked times) wrote them."""
    with connect(url, "test") as c:
        migrate(c, target=3)
        for start, end, note in rows:
            c.execute("INSERT INTO reservations (rack, owner_user, owner_host, starts, ends, note, created) VALUES "
                      "(%s, 'mallory', 'm', %s, %s, %s, 0)", (rack, start, end, note))
        migrate(c)


def test_malformed_rows_are_shown_as_such_and_block_nothing(url):
    inv = load_inventory(VIRTUAL)
    now = time.time()
    _legacy_rows(url, inv.name, [(now - 60, math.inf, "forever"), (now + 3600, math.nan, "nan"),
                                 (now - 60, now + 40 * 86400, "too long"), (now + 600, now + 1200, "\x1b[2Jok")])
    book = DatabaseBook(url, inv.name)
    rows = book.list()
    bad = [r for r in rows if r.problem]
    assert len(rows) == 4 and len(bad) == 3
    assert all("MALFORMED" in r.text() and "blocks nothing" in r.text() for r in bad)
    assert [r.note for r in others(rows, "somebody")] == ["\x1b[2Jok"]
    check_free(inv, now, 300, "ctl run x")            # 5 min from now: free despite the Infinity row
    with pytest.raises(RackReserved, match="would run into mallory@m's reservation"):
        check_free(inv, now, 900, "ctl run x")         # runs into the good one
    # the CLI prints them (the note escaped) instead of a traceback
    for argv, shown in ((["rack", "reservations", inv.name], "MALFORMED"),
                        (["rack", "reservations", inv.name, "--json"], '"problem": "end is not a finite number"')):
        p = subprocess.run([sys.executable, "-m", "controller", *argv], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert shown in p.stdout and "\x1b" not in p.stdout, p.stdout
    assert "\\x1b[2Jok" in p.stdout or "\\u001b[2Jok" in p.stdout


def test_the_database_refuses_bad_times_from_anybody(url):
    import psycopg
    with connect(url, "test") as c:
        migrate(c)
        for start, end in ((NOW, math.inf), (math.nan, NOW), (NOW, NOW + 40 * 86400), (1.0, 2.0)):
            with pytest.raises(psycopg.errors.CheckViolation):
                c.execute("INSERT INTO reservations (rack, owner_user, owner_host, starts, ends) VALUES "
                          "('lab-a', 'x', 'y', %s, %s)", (start, end))


def test_every_time_in_a_reservation_line_has_its_date_and_zone(monkeypatch):
    """A reservation ending the day it starts printed its end as `HH:MM`; every time ctl prints is
    ISO 8601 with the zone (issue 25): both ends in full, under any local zone."""
    import re
    monkeypatch.setenv("TZ", "XST-5:30")
    time.tzset()
    try:
        r = Reservation(7, "vtest", "alice", "m1", NOW, NOW + 3600, note="calibration")
        line = r.text()
        stamps = re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d[+-]\d\d:\d\d", line)
        assert len(stamps) == 2 and all(s.endswith("+05:30") for s in stamps), line
        assert not re.search(r"(?<![T\d])\d\d:\d\d(?![:\d+-])", line.replace(stamps[0], "").replace(stamps[1], "")), line
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
