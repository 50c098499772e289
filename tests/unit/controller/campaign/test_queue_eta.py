"""ETAs in queue order (pure), as the scheduler runs campaigns: one at a time, the one with a
run in progress first, then the lowest-numbered that can start a run; a campaign waiting for
its `--at` or its window leaves the rack to the others. Then the same through a real store:
a second queued campaign finishes after the first, not as if it started now."""
from __future__ import annotations

import datetime as dt

import pytest

from controller.campaign.plan import expand_cases, order_runs
from controller.campaign.progress import QueueEntry, progress_of, queue_entries, queue_schedule
from controller.campaign.spec import load_campaign
from controller.campaign.sqlite_store import SQLiteStore
from controller.campaign.timing import estimate_finish, parse_window

NOW = dt.datetime(2026, 11, 22, 12, 0).timestamp()


def test_one_campaign_is_the_plain_estimate():
    e = QueueEntry(1, (80.0,) * 10, pause_s=5.0)
    assert queue_schedule([e], NOW) == {1: (NOW, estimate_finish(NOW, [80.0] * 10, 5.0, None))}


def test_queued_campaigns_follow_each_other_in_number_order():
    a, b, c = QueueEntry(1, (100.0,) * 3), QueueEntry(2, (50.0,) * 2, pause_s=10.0), QueueEntry(3, (20.0,))
    s = queue_schedule([c, b, a], NOW)           # the order given does not matter: numbers do
    assert s[1] == (NOW, NOW + 300)
    assert s[2] == (NOW + 300, NOW + 300 + 50 + 10 + 50)
    assert s[3] == (NOW + 410, NOW + 430)


def test_the_campaign_with_a_run_in_progress_goes_first():
    a = QueueEntry(1, (100.0,))
    b = QueueEntry(2, (30.0, 60.0), in_progress=True)      # 30 s left of its current run
    s = queue_schedule([a, b], NOW)
    assert s[2] == (NOW, NOW + 90) and s[1] == (NOW + 90, NOW + 190)


def test_a_campaign_not_yet_due_leaves_the_rack_to_later_ones():
    a = QueueEntry(1, (60.0,), not_before=NOW + 1000)
    b = QueueEntry(2, (100.0, 100.0))
    s = queue_schedule([a, b], NOW)
    assert s[2] == (NOW, NOW + 200)
    assert s[1] == (NOW + 1000, NOW + 1060)
    # ... and when it is due while another runs, it waits for that one to finish
    a = QueueEntry(1, (60.0,), not_before=NOW + 150)
    s = queue_schedule([a, b], NOW)
    assert s[1] == (NOW + 200, NOW + 260)


def test_a_window_releases_the_rack_between_runs():
    w = parse_window("12:00-12:03")                        # 180 s a day
    a = QueueEntry(1, (100.0, 100.0), window=w)            # the second run no longer fits today
    b = QueueEntry(2, (50.0,))
    s = queue_schedule([a, b], NOW)
    assert s[2] == (NOW + 100, NOW + 150)                  # runs while 1 waits for tomorrow's window
    assert s[1] == (NOW, NOW + 86400 + 100)


def test_nothing_left_is_no_entry():
    assert queue_schedule([QueueEntry(1, ())], NOW) == {}


CAMPAIGN = """
version: 1
name: {name}
scenario: distinct-bottleneck
fixed: {{duration: 5s}}
sweep:
  link2: [10M, 20M]
repetitions: 2
order: sequential
pause: 0s
overhead: 10s
"""


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    s = SQLiteStore()
    yield s
    s.close()


def _submit(store, tmp_path, name):
    f = tmp_path / f"{name}.yaml"
    f.write_text(CAMPAIGN.format(name=name))
    spec, _lines, text = load_campaign(f)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), spec.repetitions, spec.order, None)
    return store.submit(spec=spec, file_path=f, file_text=text, inventory_path=tmp_path / "inv.yaml",
                        inventory_name="vunit", runs_root=tmp_path / "runs", seed=None, not_before=None,
                        cases=cases, planned=planned, durations={c.index: 5.0 for c in cases})


def test_through_the_store_the_second_campaign_finishes_after_the_first(store, tmp_path):
    first = _submit(store, tmp_path, "first")
    second = _submit(store, tmp_path, "second")
    p1 = progress_of(store, first, now=NOW)
    p2 = progress_of(store, second, now=NOW)
    assert p1.finish_at == NOW + 4 * 15                    # 4 runs x (5 s traffic + 10 s overhead)
    assert p2.finish_at == NOW + 8 * 15 and p2.eta_s == 8 * 15
    # the first one's run in progress counts what is left of it
    a = store.start_attempt(first.num, 1, "20260101T000000Z_rid1", tmp_path / "runs" / "20260101T000000Z_rid1", None)
    assert a is not None
    started = store.attempts(first.num)[0].started
    entries = queue_entries(store, started + 12.0)
    assert entries[0].in_progress and entries[0].runs_s[0] == pytest.approx(3.0)
    assert progress_of(store, store.campaign(second.num), now=started + 12.0).finish_at == \
        pytest.approx(started + 12.0 + 3.0 + 3 * 15 + 4 * 15)
    # a paused campaign is out of the queue: the other one moves up
    store.set_state(first.num, "paused", "test")
    assert progress_of(store, store.campaign(second.num), now=NOW).finish_at == NOW + 4 * 15
