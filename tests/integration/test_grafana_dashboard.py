"""The shipped Grafana dashboard is a valid Grafana JSON model for an InfluxDB (Flux) data
source, and every query in it runs against the real InfluxDB and returns a run's data.
(No Grafana server is available here: its queries are run the way the data source runs them,
with Grafana's built-in variables bound.)"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.influx import client
from tests.unit.controller.cli.test_json_envelope import check

pytestmark = pytest.mark.integration
DASHBOARD = Path(__file__).resolve().parents[2] / "controller" / "telemetry" / "grafana" / "ctl-run-overview.json"


def test_dashboard_model_is_loadable_and_uses_one_influx_datasource():
    d = json.loads(DASHBOARD.read_text())
    assert d["uid"] and d["title"] and isinstance(d["schemaVersion"], int)
    # A data-source template variable, not `__inputs` (which only the import dialog fills in):
    # the same file works imported in the UI and provisioned from files (grafana/grafana#10786).
    assert "__inputs" not in d
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert set(variables) == {"datasource", "bucket", "run"}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "influxdb"
    assert variables["run"]["datasource"]["uid"] == "${datasource}"
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)) >= 8
    for p in d["panels"]:
        assert p["datasource"]["uid"] == "${datasource}" and p["targets"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}" and "${run}" in t["query"]


def _bind(query: str, bucket: str, run: str) -> str:
    return (query.replace("${bucket}", bucket).replace("${run}", run)
            .replace("v.timeRangeStart", "0").replace("v.timeRangeStop", "now()").replace("v.windowPeriod", "1s"))


def test_every_panel_query_returns_the_runs_data(rack):
    # long enough for net-snmp's 3 s counter cache to give rates
    p = rack.ctl("run", "distinct-bottleneck", "--link2", "20M", "--duration", "10", "--json")
    assert p.returncode == 0, p.stderr
    check(json.loads(p.stdout), "run")              # a real run's --json against its shipped schema
    run = json.loads(p.stdout)["data"]["run_id"]
    d = json.loads(DASHBOARD.read_text())
    bucket = rack.inventory.influxdb.bucket
    with client(rack) as c:
        q = c.query_api()
        run_var = next(v for v in d["templating"]["list"] if v["name"] == "run")
        runs = [r.get_value() for t in q.query(_bind(run_var["query"], bucket, run))
                for r in t.records]
        assert run in runs
        for panel in d["panels"]:
            rows = sum(len(t.records) for target in panel["targets"] for t in q.query(_bind(target["query"], bucket, run)))
            assert rows > 0, panel["title"]
