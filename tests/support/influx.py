"""Read back from the test rack's real InfluxDB (Flux over influxdb-client)."""
from __future__ import annotations

from collections import Counter


def client(rack):
    from influxdb_client import InfluxDBClient
    inv = rack.inventory
    token = (rack.state_dir / "influxdb" / inv.name / "token").read_text().strip()
    return InfluxDBClient(url=inv.influxdb.url, token=token, org=inv.influxdb.org, timeout=30_000)


# Every point of a run, whatever its time: Flux's range() stops at now() unless told otherwise, and a
# host's clock (or a placement estimate) may put a point a little after the query's now.
RANGE_ALL = "range(start: 0, stop: 2200-01-01T00:00:00Z)"


def query_counts(rack, **tags: str) -> Counter:
    """Number of stored values per (measurement, host, field) for points with these tags."""
    flt = " and ".join(f'r["{k}"] == "{v}"' for k, v in tags.items())
    q = (f'from(bucket: "{rack.inventory.influxdb.bucket}") |> {RANGE_ALL} '
         f'|> filter(fn: (r) => {flt}) |> group(columns: ["_measurement", "host", "_field"]) |> count()')
    out: Counter = Counter()
    with client(rack) as c:
        for table in c.query_api().query(q):
            for rec in table.records:
                out[(rec.values["_measurement"], rec.values["host"], rec.values["_field"])] += rec.get_value()
    return out


def query_values(rack, measurement: str, field: str, **tags: str) -> list[tuple[int, object]]:
    flt = " and ".join([f'r["_measurement"] == "{measurement}"', f'r["_field"] == "{field}"'] +
                       [f'r["{k}"] == "{v}"' for k, v in tags.items()])
    # Flux gives the time as integer nanoseconds: the client library would round it to microseconds.
    q = (f'from(bucket: "{rack.inventory.influxdb.bucket}") |> {RANGE_ALL} |> filter(fn: (r) => {flt}) '
         f'|> map(fn: (r) => ({{r with t_ns: int(v: r._time)}}))')
    out = []
    with client(rack) as c:
        for table in c.query_api().query(q):
            for rec in table.records:
                out.append((int(rec.values["t_ns"]), rec.get_value()))
    return sorted(out)
