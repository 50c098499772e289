"""`ctl runs list` and `ctl runs export` on the recorded runs of tests/fixtures/generated/runs
(controller/cli/runs.py, controller/results/catalog.py, controller/results/export.py).

Contract: list shows every record of the runs dir, oldest first, filtered by scenario, time
(ISO 8601 with a zone, a date, a duration before now), status and parameter values compared
after parsing (`--param delay=0.8s` is `--param delay=800ms`); export writes a runs table, one
table per kind of summary item, the long samples table and a data dictionary that pandas reads
with typed columns (CSV with the dictionary's types, Parquet as it is), the same rows in every
format; a run's numbers are its summary's; bad input is one line on stderr, exit 2, nothing
written; a planted symlink in --out is refused and its target untouched.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from controller.cli import main
from controller.run.replay import summarize_record
from tests.support.shipped import RECORDED_RUNS, copy_runs, no_state_dir, recorded_runs

RUNS = recorded_runs()
SHARED = RECORDED_RUNS / "shared-bottleneck" / "delay-800ms"
SHARED_ID = RUNS[SHARED]
SWEEP_ID = RUNS[RECORDED_RUNS / "rtt-loss-sweep" / "rtt-40ms_loss-0.01pct_bbr"]


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    """The recorded runs under their run ids, as a runs directory holds them."""
    return copy_runs(RUNS, tmp_path_factory.mktemp("runs"))


@pytest.fixture()
def ctl(capsys, runs_dir):
    def call(*argv: str) -> tuple[int, str, str]:
        with no_state_dir():
            code = main([*argv, "--runs-dir", str(runs_dir)])
        out, err = capsys.readouterr()
        return code, out, err
    return call


def listed(ctl, *filters: str) -> list[str]:
    code, out, err = ctl("runs", "list", *filters, "--json")
    assert (code, err) == (0, ""), err
    doc = json.loads(out)
    assert doc["command"] == "runs list"
    return [r["run_id"] for r in doc["data"]]


def test_list_every_run_oldest_first(ctl):
    assert listed(ctl) == sorted(RUNS.values())
    code, out, err = ctl("runs", "list")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["RUN", "STARTED", "(UTC)", "STATUS", "CAMPAIGN", "PARAMETERS", "GIVEN"]
    row = next(l for l in lines if l.startswith(SHARED_ID))
    assert row.split()[1:] == ["2026-11-22T04:18:17Z", "invalid", "-", "--delay", "800ms", "--duration", "20s"]
    assert lines[-1].startswith(f"{len(RUNS)} runs under /")


def test_list_json_fields(ctl):
    code, out, _ = ctl("runs", "list", "--scenario", "shared-bottleneck", "--json")
    (r,) = json.loads(out)["data"]
    assert r["run_id"] == SHARED_ID and r["status"] == "invalid" and r["valid"] is False
    assert r["parameters"] == {"delay": "800ms", "duration": "20s"} and r["inventory"] == "i6dev"
    # the cut-down record has no creation time: its id's (UTC, to the second)
    assert r["started"] == "2026-11-22T04:18:17.000000Z" and r["finished"] is None
    assert r["record"].endswith("/" + SHARED_ID)


@pytest.mark.parametrize("filters, expected", [
    (("--param", "delay=800ms"), [SHARED_ID]),
    (("--param", "delay=0.8s"), [SHARED_ID]),                        # the same value, another spelling
    (("--param=--delay=800000us",), [SHARED_ID]),
    (("--param", "delay=801ms"), []),
    (("--param", "cc=bbr"), [SWEEP_ID]),
    (("--param", "cc=cubic", "--scenario", "rtt-loss-sweep"), []),
    (("--param", "loss=0.01%", "--param", "rtt=40ms"), [SWEEP_ID]),
    (("--status", "invalid"), [SHARED_ID]),
    (("--status", "failed,aborted"), []),
    (("--since", "2026-11-22T04:19:00Z", "--until", "2026-11-22T04:20:00Z"), [SWEEP_ID]),
    (("--since", "2026-11-22T13:19:00+09:00", "--until", "2026-11-22T13:20:00+09:00"), [SWEEP_ID]),
    (("--until", "2026-11-22"), []),
    (("--since", "2026-11-23"), []),
    (("--campaign", "nope"), []),
])
def test_list_filters(ctl, filters, expected):
    assert listed(ctl, *filters) == expected


@pytest.mark.parametrize("filters, message", [
    (("--param", "delay"), "runs: --param 'delay': give NAME=VALUE, e.g. --param cc=mcubic"),
    (("--param", "nope=1"), "runs: --param nope=1: no scenario has a parameter 'nope'"),
    (("--param", "delay=fast"), "runs: --param delay=fast: --delay: "),
    (("--since", "2026-11-22T04:00"), "--since: '2026-11-22T04:00' has no zone: add Z (UTC) or an offset such as +09:00"),
    (("--since", "yesterday"), "--since: 'yesterday' is neither an ISO 8601 time with a zone"),
    (("--status", "done"), "runs: --status 'done' is not one of completed, invalid, failed, aborted, error, running"),
    (("--scenario", "nope"), "runs: --scenario 'nope' is not one of "),
])
def test_list_bad_input_is_one_line_and_exit_2(ctl, filters, message):
    code, out, err = ctl("runs", "list", *filters)
    assert (code, out) == (2, "")
    assert err.startswith("ctl: error: " + message) and err.count("\n") == 1, err


# ---- export ------------------------------------------------------------------------------------

def typed(out: Path, table: str) -> pd.DataFrame:
    """The README's way to read a CSV export with its types (columns.csv says them)."""
    cols = pd.read_csv(out / "columns.csv")
    c = cols[cols["table"] == table]
    dtype = {r.column: {"string": "string", "int": "Int64", "float": "float64", "bool": "boolean"}[r.type]
             for r in c.itertuples() if r.type != "time"}
    return pd.read_csv(out / f"{table}.csv", dtype=dtype, parse_dates=list(c[c["type"] == "time"]["column"]))


@pytest.fixture(scope="module")
def csv_export(runs_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "csv"
    with no_state_dir():
        assert main(["runs", "export", "--format", "csv", "--out", str(out), "--runs-dir", str(runs_dir)]) == 0
    return out


def test_export_csv_is_read_by_pandas_with_typed_columns(csv_export):
    runs = typed(csv_export, "runs")
    assert sorted(runs["run_id"]) == sorted(RUNS.values())
    assert str(runs["started"].dtype) == "datetime64[ns, UTC]" or str(runs["started"].dtype).startswith("datetime64")
    assert str(runs["started"].dt.tz) == "UTC"
    assert runs["valid"].dtype == "boolean" and runs["param_bw_bps"].dtype == "Int64"      # bit/s, whole
    shared = runs.set_index("run_id").loc[SHARED_ID]
    assert shared["param_delay_s"] == 0.8 and shared["param_queue"] == "50 slots" and shared["param_queue_slots"] == 50
    assert shared["summary_source"] == "recomputed"          # the fixtures carry no summary.json
    assert shared["traffic_s"] == pytest.approx(31.300372)
    # the numbers are the summary's
    with no_state_dir():
        s = summarize_record(SHARED)
    assert shared["ratio"] == s["ratio"] and shared["mptcp.negotiated"] == True  # noqa: E712 (numpy bool)
    flows = typed(csv_export, "flows")
    mine = flows[flows["run_id"] == SHARED_ID].set_index("entity")
    assert mine.loc["tcp", "receiver_mbps"] == next(f["receiver_mbps"] for f in s["flows"] if f["name"] == "tcp")
    assert mine["param_delay_s"].tolist() == [0.8, 0.8] and flows["receiver_mbps"].dtype == "float64"
    subflows = typed(csv_export, "subflows")
    assert len(subflows[subflows["run_id"] == SHARED_ID]) == len(s["subflows"])


def test_export_samples_long_table(csv_export):
    cols = pd.read_csv(csv_export / "columns.csv")
    assert list(cols[cols["table"] == "samples"]["column"]) == [
        "run_id", "scenario", "time", "elapsed_s", "measurement", "host", "flow", "subflow", "link", "iface",
        "direction", "tags", "metric", "value", "text", "unit"]
    s = typed(csv_export, "samples")
    assert str(s["time"].dt.tz) == "UTC" and s["value"].dtype == "float64" and s["elapsed_s"].dtype == "float64"
    first = s[(s["run_id"] == SHARED_ID)].iloc[0]
    # the first line of the record's metrics.jsonl, field by field
    p = json.loads((SHARED / "metrics.jsonl").open().readline())
    assert (first["measurement"], first["host"], first["iface"], first["link"]) == ("iface", "br3", "d1a", "sbd1")
    assert first["metric"] == "rx_bytes" and first["value"] == p["f"]["rx_bytes"] and first["unit"] == "bytes"
    assert first["time"] == pd.Timestamp(p["t"] // 1000 * 1000, unit="ns", tz="UTC")
    assert first["tags"] == "role=bridge;side=a"
    # every numeric field of every point is one row
    n = sum(sum(1 for v in json.loads(l)["f"].values() if isinstance(v, (int, float)))
            for l in (SHARED / "metrics.jsonl").read_text().splitlines())
    assert int((s["run_id"] == SHARED_ID).sum()) >= n
    units = dict(zip(s["metric"], s["unit"]))
    assert units["rtt_ms"] == "ms" and units["cwnd_pkts"] == "packets"


def test_the_data_dictionary(csv_export):
    cols = pd.read_csv(csv_export / "columns.csv").set_index(["table", "column"])
    assert cols.loc[("runs", "param_bw_bps"), "unit"] == "bit/s"
    assert cols.loc[("runs", "param_delay_s"), "unit"] == "s"
    assert cols.loc[("flows", "receiver_mbps"), "unit"] == "Mbit/s"
    assert cols.loc[("runs", "started"), "type"] == "time"
    # a column defined per table: throughput_mbps of the runs table is rtt-loss-sweep's, of downloads mptcp-bittorrent's
    assert cols.loc[("runs", "throughput_mbps"), "description"].startswith("iperf3 receiver goodput")
    assert cols.loc[("downloads", "throughput_mbps"), "description"].startswith("payload bits / download_s")
    # a column two scenarios' runs hold as different quantities: each scenario's definition
    d = cols.loc[("runs", "mptcp_mbps"), "description"]
    assert "shared-bottleneck: the MPTCP connection's" in d and "mptcp-bittorrent: mean throughput_mbps" in d


def test_parquet_and_jsonl_hold_the_same_rows(runs_dir, tmp_path, csv_export):
    for fmt in ("parquet", "jsonl"):
        with no_state_dir():
            assert main(["runs", "export", SHARED_ID, "--format", fmt, "--out", str(tmp_path / fmt),
                         "--runs-dir", str(runs_dir)]) == 0
    pq = pd.read_parquet(tmp_path / "parquet" / "samples.parquet")
    assert str(pq["time"].dtype) == "datetime64[us, UTC]" and pq["value"].dtype == "float64"
    csv = typed(csv_export, "samples")
    csv = csv[csv["run_id"] == SHARED_ID].reset_index(drop=True)
    assert len(pq) == len(csv) and (pq["value"].fillna(-1) == csv["value"].fillna(-1)).all()
    assert (pq["time"].astype("int64") == csv["time"].astype("datetime64[us, UTC]").astype("int64")).all()
    runs = pd.read_parquet(tmp_path / "parquet" / "runs.parquet")
    assert runs["valid"].dtype == bool and runs.loc[0, "param_delay_s"] == 0.8
    lines = (tmp_path / "jsonl" / "flows.jsonl").read_text().splitlines()
    assert [json.loads(l)["entity"] for l in lines] == ["mptcp", "tcp"]
    assert json.loads(lines[0])["started"] == "2026-11-22T04:18:17.000000Z"


def test_export_bad_input_writes_nothing(ctl, tmp_path):
    out = tmp_path / "x"
    code, _, err = ctl("runs", "export", "no-such-run", "--out", str(out))
    assert code == 2 and "no run record 'no-such-run'" in err and not out.exists()
    code, _, err = ctl("runs", "export", SHARED_ID, "--campaign", "3", "--out", str(out))
    assert code == 2 and "give RUNS, --campaign or --reproduction, not several" in err and not out.exists()
    code, _, err = ctl("runs", "export", "--format", "xlsx", "--out", str(out))
    assert code == 2 and not out.exists()


def test_export_refuses_a_planted_symlink(ctl, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (out / "runs.csv").symlink_to(victim)
    code, _, err = ctl("runs", "export", SHARED_ID, "--no-samples", "--out", str(out))
    assert code == 2 and "refusing export file" in err and "runs.csv: not a regular file (a symlink" in err
    assert victim.read_text() == "keep me" and (out / "runs.csv").is_symlink()


def test_export_a_campaign_from_the_local_store(tmp_path, monkeypatch, capsys):
    """A campaign's completed runs, found through the local SQLite store (no lab database): each
    run's own record; a completed run whose record is gone is named on stderr and exit 1."""
    from controller.campaign.plan import expand_cases, order_runs
    from controller.campaign.policy import Decision
    from controller.campaign.spec import load_campaign
    from controller.campaign.sqlite_store import SQLiteStore
    from controller.results.records import RunRecord
    from tests.support.shipped import ROOT

    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("CTL_DATABASE_URL", raising=False)
    file = ROOT / "campaigns" / "rtt-loss-sweep-short.yaml"
    spec, _l, text = load_campaign(file)
    cases = expand_cases(spec)
    store = SQLiteStore()
    c = store.submit(spec=spec, file_path=file, file_text=text, inventory_path=tmp_path / "i.yaml",
                     inventory_name="vunit", runs_root=tmp_path / "runs", seed=5, not_before=None, cases=cases,
                     planned=order_runs(len(cases), spec.repetitions, spec.order, 5),
                     durations={x.index: 5.0 for x in cases})
    runs = store.runs(c.num)
    gone = None
    for r in runs:
        rec = RunRecord(tmp_path / "runs", f"20260101T0000{r.seq:02d}Z_rtt-loss-sweep_seq-{r.seq}")
        rec.start(scenario="rtt-loss-sweep", parameters={"values": {"cc": r.varied["cc"]}, "given": r.varied},
                  inventory={"name": "vunit"}, inventory_file="", campaign=c.id)
        rec.write_summary({"scenario": "rtt-loss-sweep", "throughput_mbps": 100.0 + r.seq, "valid": True})
        rec.finish("completed")
        store.start_attempt(c.num, r.seq, rec.id, rec.dir, None)
        store.finish_attempt(c.num, r.seq, 1, status="completed", exit_code=0, error=None, klass="ok",
                             decision=Decision("done", "done"))
        gone = rec.dir
    store.finish_campaign(c.num)
    store.close()
    shutil.rmtree(gone)                       # the last run's record is not on this controller any more
    out = tmp_path / "export"
    code = main(["runs", "export", "--campaign", str(c.num), "--format", "csv", "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 1
    assert f"ctl: warning: campaign #{c.num} run {runs[-1].seq} {gone.name}: no record on this controller" in err
    got = typed(out, "runs")
    assert len(got) == len(runs) - 1 and set(got["campaign"]) == {c.id}
    assert sorted(got["throughput_mbps"]) == [100.0 + r.seq for r in runs[:-1]]
    assert set(got["summary_source"]) == {"summary.json"} and got["param_cc"].notna().all()
    # list --campaign finds the same runs by the id their manifests carry
    assert main(["runs", "list", "--campaign", c.id, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["data"]) == len(runs) - 1
    # ... and by its number, as `ctl campaign status` shows it ("#3" or "3")
    for ref in (str(c.num), f"#{c.num}"):
        assert main(["runs", "list", "--campaign", ref, "--json"]) == 0
        assert len(json.loads(capsys.readouterr().out)["data"]) == len(runs) - 1
    assert main(["runs", "list", "--campaign", "999"]) == 2
    assert "runs: --campaign 999: " in capsys.readouterr().err


# The "Reading results" page's pandas and R examples, read from the page itself (so the page and
# the test cannot drift apart) and run on an export of the recorded runs.
READING_RESULTS = Path(__file__).resolve().parents[4] / "docs" / "howto" / "reading-results.md"


def fenced(path: Path, language: str) -> str:
    """The one fenced code block of `language` in a Markdown page."""
    blocks, current = [], None
    for line in path.read_text().splitlines():
        if current is None and line.strip() == f"```{language}":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    assert len(blocks) == 1, f"{path.name}: {len(blocks)} ```{language} blocks"
    return blocks[0]


def test_the_pandas_example_of_reading_results(csv_export, tmp_path, monkeypatch, capsys):
    shutil.copytree(csv_export, tmp_path / "export")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(fenced(READING_RESULTS, "python"), str(READING_RESULTS), "exec"), scope)
    flows = scope["flows"]
    assert str(flows["started"].dt.tz) == "UTC" and flows["receiver_mbps"].dtype == "float64"
    assert flows["param_cc"].dtype == "string" and flows["valid"].dtype == "boolean"
    out = capsys.readouterr().out
    assert "receiver_mbps" in out and "shared-bottleneck" in out
    # the shared-bottleneck run's two entities as the page's groupby prints them
    means = flows.groupby(["scenario", "param_cc", "entity"])["receiver_mbps"].mean()
    assert means[("shared-bottleneck", "cubic", "mptcp")] == pytest.approx(2.716)


# Checks appended to the page's R example: every column parsed without a problem, with its type.
R_CHECKS = """
stopifnot(nrow(problems(flows)) == 0)
stopifnot(inherits(flows$started, "POSIXct"), attr(flows$started, "tzone") == "UTC")
stopifnot(is.double(flows$receiver_mbps), is.character(flows$param_cc), is.logical(flows$valid))
m <- aggregate(receiver_mbps ~ scenario + param_cc + entity, data = flows, FUN = mean)
cat(sprintf("ROW %s %s %s %.3f\\n", m$scenario, m$param_cc, m$entity, m$receiver_mbps), sep = "")
"""


def test_the_r_example_of_reading_results(csv_export, tmp_path):
    # R and readr are Debian packages scripts/setup.sh installs (r-base-core, r-cran-readr).
    shutil.copytree(csv_export, tmp_path / "export")
    script = tmp_path / "example.R"
    script.write_text(fenced(READING_RESULTS, "r") + R_CHECKS)
    p = subprocess.run(["Rscript", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "receiver_mbps" in p.stdout                   # the page's aggregate() printed its table
    rows = {tuple(l.split()[1:4]): float(l.split()[4]) for l in p.stdout.splitlines() if l.startswith("ROW ")}
    assert rows[("shared-bottleneck", "cubic", "mptcp")] == pytest.approx(2.716)
    assert rows[("shared-bottleneck", "cubic", "tcp")] == pytest.approx(4.867)
