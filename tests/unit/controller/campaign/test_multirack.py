"""Several racks on one campaign, without a rack: the next step sees other racks' claims, lets
go of the rack for other people's reservations and never starts a run that would run into one;
the report reads results uploaded by other controllers and shows the rack as a factor; the
campaign file's `racks` / `rack_group`."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from controller.campaign.plan import expand_cases, order_runs, rack_inventories
from controller.campaign.policy import Busy, Decision, RunView, first_clash, fits_between, next_step
from controller.campaign.report import export_records, write_report
from controller.campaign.spec import CampaignFileError, load_campaign
from controller.campaign.sqlite_store import SQLiteStore

NOW = 1_800_000_000.0


def step(runs, busy=(), me="A", **kw):
    return next_step("running", None, runs, NOW, window=None, pause_s=0.0, last_finished=None, overhead_s=20.0,
                     me=me, busy=busy, **kw)


def test_runs_claimed_by_another_rack_are_in_progress_there():
    runs = [RunView(1, "pending", None, 60.0, "B", NOW + 30), RunView(2, "pending", None, 60.0)]
    assert step(runs).seq == 2
    assert step([runs[0]]).kind == "idle"                                   # B works on it: not finished
    assert step([RunView(1, "pending", None, 60.0, "B", NOW - 1)]).seq == 1  # B's claim ran out: ours to take
    assert step([RunView(1, "pending", None, 60.0, "A", NOW + 30)]).seq == 1  # our own claim
    assert step([RunView(1, "done", None, 60.0)]).kind == "finish"


def test_other_peoples_reservations_are_not_run_into():
    runs = [RunView(1, "pending", None, 60.0)]
    morning = Busy(NOW + 50, NOW + 3600, "alice@m1", "calibration")
    s = step(runs, [morning])
    # 60 s of traffic + 20 s of overhead would end at NOW+80, inside alice's reservation
    assert s.kind == "wait" and s.until == morning.end and not s.hold_rack
    assert "would run into the rack's reservation: reserved by alice@m1" in s.why and "(calibration)" in s.why
    assert step(runs, [Busy(NOW + 81, NOW + 3600, "alice@m1")]).kind == "run"  # ends just before it
    now_busy = Busy(NOW - 10, NOW + 100, "bob@m2")
    s = step(runs, [now_busy])
    assert s.kind == "wait" and s.why.startswith("the rack is reserved by bob@m2") and s.until == now_busy.end
    assert first_clash(NOW, 80, [morning, now_busy]) == now_busy
    fits = fits_between(NOW, [morning], 20.0)
    assert fits(29.0) and not fits(31.0)


def _submit(store, tmp_path, racks=("vtest", "vtestb")):
    f = tmp_path / "c.yaml"
    f.write_text("version: 1\nname: mr\nscenario: distinct-bottleneck\nfixed: {duration: 5s}\n"
                 "sweep:\n  link2: [10M, 20M]\nrepetitions: 2\norder: sequential\nreport: {metric: jain_index}\n")
    spec, _l, text = load_campaign(f)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), spec.repetitions, spec.order, None)
    return store.submit(spec=spec, file_path=f, file_text=text, inventory_path=tmp_path / "a.yaml",
                        inventory_name="vtest", runs_root=tmp_path / "runs", seed=None, not_before=None, cases=cases,
                        planned=planned, durations={c.index: 5.0 for c in cases}, racks=list(racks))


def test_the_report_reads_uploaded_results_and_shows_the_rack_as_a_factor(tmp_path, tmp_state_dir):
    store = SQLiteStore()
    c = _submit(store, tmp_path)
    jain = {1: 0.70, 2: 0.72, 3: 0.80, 4: 0.60}
    for r in store.runs(c.num):
        rack = "vtest" if r.seq % 2 else "vtestb"
        got = store.claim_next(c.num, rack=rack, holder=rack, lease_s=60)
        assert got.seq == r.seq
        rid = f"20260101T000000Z_rid{r.seq}"
        a = store.start_attempt(c.num, r.seq, rid, Path(f"/elsewhere/{rack}/rid{r.seq}"), None,
                                holder=rack, rack=rack, controller=f"bob@ctl-{rack}:1/{rack}")
        store.finish_attempt(c.num, r.seq, a, status="completed", exit_code=0, error=None, klass="ok",
                             decision=Decision("done", "done"), holder=rack)
        # the records are on the other controllers: only the uploads are here
        store.put_record(run_id=rid, num=c.num, seq=r.seq, attempt=a, rack=rack, controller="x",
                         record_dir=Path(f"/elsewhere/{rack}/rid{r.seq}"), status="completed",
                         manifest={"status": "completed", "run_id": rid}, summary={"jain_index": jain[r.seq]})
    html, md = write_report(store, store.campaign(c.num), tmp_path / "report")
    text = html.read_text()
    assert "Rack as a factor" in text and "vtest: n, mean ± 95% CI" in text and "vtestb: n, mean ± 95% CI" in text
    assert "4 of 4 done" in text and "(on ctl-vtest)" in text and 'href="../../elsewhere' not in text
    mdt = md.read_text()
    # case 1 (link2=10M) ran rep 1 on vtest (0.70) and rep 2 on vtestb (0.72)
    assert "| 1 | 10M | 1: 0.7 | 1: 0.72 |" in mdt and "| all |  | 2: 0.75 ± " in mdt
    ex = export_records(store, store.campaign(c.num), tmp_path / "exported")
    assert (ex.written, ex.completed, ex.copied_local, ex.missing) == (4, 4, 0, [])
    assert json.loads((tmp_path / "exported" / "20260101T000000Z_rid3" / "summary.json").read_text()) == \
        {"jain_index": 0.8}
    store.close()


def test_campaign_racks_are_inventory_files_next_to_the_campaign(tmp_path, tmp_state_dir):
    from tests.support.rack import write_test_inventory
    write_test_inventory(tmp_path / "a.yaml", name="racka")
    write_test_inventory(tmp_path / "b.yaml", name="rackb")
    write_test_inventory(tmp_path / "c.yaml", name="racka")
    base = ("version: 1\nscenario: distinct-bottleneck\nfixed: {duration: 5s}\n")
    f = tmp_path / "c1.yaml"
    f.write_text(base + "racks: [a.yaml, b.yaml]\n")
    spec, lines, _t = load_campaign(f)
    assert [i.name for _p, i in rack_inventories(spec, f, lines)] == ["racka", "rackb"]
    f.write_text(base + "racks: [a.yaml, c.yaml]\n")
    spec, lines, _t = load_campaign(f)
    with pytest.raises(CampaignFileError, match=r"c1.yaml:4: racks\[1\]: .* is rack 'racka' again"):
        rack_inventories(spec, f, lines)
    f.write_text(base + "racks: [a.yaml, missing.yaml]\n")
    spec, lines, _t = load_campaign(f)
    with pytest.raises(CampaignFileError, match=r"racks\[1\]"):
        rack_inventories(spec, f, lines)
    f.write_text(base + "racks: [a.yaml]\nrack_group: lab\n")
    with pytest.raises(CampaignFileError, match="either `racks`"):
        load_campaign(f)
    f.write_text(base + "racks: []\n")
    with pytest.raises(CampaignFileError, match="empty list of racks"):
        load_campaign(f)
    assert time.time() > 0
