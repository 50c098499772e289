"""Run records as tables pandas and R read directly (`ctl runs export`).

Tables (one file each, `<table>.<csv|jsonl|parquet>`):

- `runs`: one row per run: `run_id`, `scenario`, `campaign`, `status`, `valid`, `started`,
  `finished`, `traffic_start`, `traffic_end` (ISO 8601 UTC), `traffic_s`, `ctl_version`,
  `ctl_commit`, `inventory`, `summary_source`, every parameter of the scenario as its own
  column (`param_<name>[_<unit>]`, in the unit its name says), then every number of the
  summary that is about the run as a whole (nested ones as `a.b`).
- one table per kind of thing the scenario's summary lists (`flows`, `connections`,
  `subflows`, `links`, `hosts`, `tests`, `paths`, `sender_counters`, ...: a list of objects
  or an object of objects in summary.json): one row per run x item, the run's identifying
  columns (`run_id`, `scenario`, `campaign`, `started`, `status`, `valid`, the parameters),
  `entity` (the item's name) and the item's numbers.
- `samples` (optional): the long table of every telemetry point of metrics.jsonl, one row per
  point x field: `run_id`, `scenario`, `time` (ISO 8601 UTC, microseconds), `elapsed_s` (since
  the traffic started), `measurement`, `host`, `flow`, `subflow`, `link`, `iface`, `direction`,
  `tags` (the point's other tags, `k=v;...`), `metric`, `value` (a number: counters, rates,
  booleans as 0/1), `text` (a field that is text, e.g. the congestion control), `unit`.
- `columns`: the data dictionary: table, column, type, unit, description.

Types are the same in every format: numbers are numbers, `valid` a boolean, times ISO 8601
UTC strings in CSV and JSON Lines (`pd.read_csv(..., parse_dates=[...])`, R `readr`) and
timestamps (UTC, microseconds) in Parquet. A missing value is empty (CSV), null (JSON Lines,
Parquet). Rows are built by pure functions from a record's manifest, summary and points; the
writers take open files. Parquet needs pyarrow (`pip install ctl[parquet]`).
"""
from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import json
import math
import os
from dataclasses import dataclass, field
from typing import IO, Any, Iterable, Iterator, Mapping, Sequence

from controller.results import columns as columns_mod
from controller.results.catalog import verdict
from controller.results.records import id_time
from controller.results.wire import unit_of
from controller.safefs import new_file_at

FORMATS = ("csv", "jsonl", "parquet")
TIME_COLUMNS = frozenset({"started", "finished", "traffic_start", "traffic_end", "time"})
RUN_COLUMNS = ("run_id", "scenario", "campaign", "status", "valid", "started", "finished", "traffic_start",
               "traffic_end", "traffic_s", "ctl_version", "ctl_commit", "inventory", "summary_source", "valid_recomputed")
# What every item row repeats of its run (with the parameters).
ITEM_RUN_COLUMNS = ("run_id", "scenario", "campaign", "started", "status", "valid")
SAMPLE_COLUMNS = ("run_id", "scenario", "time", "elapsed_s", "measurement", "host", "flow", "subflow", "link",
                  "iface", "direction", "tags", "metric", "value", "text", "unit")
_SAMPLE_TAG_COLUMNS = ("host", "flow", "subflow", "link", "iface", "direction")
_DROPPED_TAGS = frozenset({"run", "scenario", "campaign", *_SAMPLE_TAG_COLUMNS})
# Keys of a summary that are not numbers about the run: said elsewhere or only text.
_SKIP = frozenset({"provenance", "units", "definitions", "paper_table", "parameters", "scenario"})
_NAME_KEYS = ("name", "connection", "subflow", "flow", "host", "link", "initial", "test", "id")
# The unit of a parameter column, by the parameter's type (values are converted to it).
PARAM_UNITS = {"rate": ("bps", "bit/s"), "delay": ("s", "s"), "duration": ("s", "s"), "size": ("bytes", "bytes"),
               "probability": ("pct", "%")}
_MEASUREMENT_UNITS = {"mptcp_counters": "count"}
_RUN_DESCRIPTIONS = {
    "run_id": "the run's id (its record directory's name)", "scenario": "the experiment",
    "campaign": "the campaign the run belongs to (empty: none)",
    "status": "completed, invalid (completed, result invalid), failed, aborted, error",
    "valid": "the run's own validity verdict: its summary.json `valid`, else its status (completed: true, "
             "invalid: false); the same as `ctl runs list --json`",
    "valid_recomputed": "the validity verdict of the summary this ctl recomputed from a record without "
                        "summary.json (empty: the run's own summary was used); may differ from `valid` "
                        "when the scenario's rule changed since the run",
    "started": "when the run started (ISO 8601 UTC)", "finished": "when the run's record was closed",
    "traffic_start": "when the traffic started", "traffic_end": "when the traffic ended",
    "traffic_s": "length of the traffic window", "ctl_version": "ctl's version that made the run",
    "ctl_commit": "ctl's git commit (+dirty: with local changes)", "inventory": "the rack (inventory name)",
    "summary_source": "summary.json (the run's own), recomputed (by this ctl from the record: the record has "
                      "no summary.json) or store (the copy in the campaign store)",
    "entity": "the item of the table (flow, connection, subflow, link, host, ... name)",
    "time": "when the point was measured (host clock corrected by the run's clock offset), ISO 8601 UTC",
    "elapsed_s": "seconds since the traffic started (negative: before)",
    "measurement": "telemetry measurement (controller/telemetry/points.py)",
    "tags": "the point's other tags, k=v separated by ;", "metric": "the field of the point",
    "value": "the field's value when it is a number (booleans 1/0)", "text": "the field's value when it is text",
    "unit": "the unit of value (empty: a count or a name)",
}
# The samples table's tag columns (a summary table's columns of these names are its own).
_SAMPLE_TAG_DESCRIPTIONS = {
    "host": "the host the point was measured on (the point's tag host)",
    "flow": "the traffic flow of the point (tag flow)",
    "subflow": "the socket of the point: local address:port -> remote (tag subflow)",
    "link": "the link of the point (tag link)", "iface": "the network interface of the point (tag iface)",
    "direction": "the direction of the point's link (tag direction: forward, reverse)",
}
_SAMPLE_DESCRIPTIONS = {**_RUN_DESCRIPTIONS, **_SAMPLE_TAG_DESCRIPTIONS}
_TABLE_DESCRIPTIONS = {c: _RUN_DESCRIPTIONS[c] for c in (*RUN_COLUMNS, "entity")}


@dataclass
class RunRows:
    """One run's rows: the `runs` row and the rows of each item table."""

    run: dict[str, Any]
    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    descriptions: dict[str, dict[str, str]] = field(default_factory=dict)   # table -> {column: its summary's definition}


def as_time(v: Any) -> dt.datetime | None:
    """Unix seconds, or an ISO 8601 string with a zone, as an aware UTC datetime."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
        return dt.datetime.fromtimestamp(v, dt.timezone.utc)
    if isinstance(v, str) and v:
        try:
            t = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return None
        return t.astimezone(dt.timezone.utc) if t.tzinfo else None
    return None


def param_columns(values: Mapping[str, Any], types: Mapping[str, str]) -> dict[str, Any]:
    """Resolved parameter values (as a run's manifest keeps them, in base units) -> columns:
    `param_<name>_<unit>` for rates (bit/s), delays and durations (s), sizes (bytes) and loss
    (%); a queue as `param_<name>` text ("50 slots") with `_slots` or `_bytes`; others as they are."""
    out: dict[str, Any] = {}
    for name, t in types.items():
        v = values.get(name)
        col = f"param_{name}"
        if t in PARAM_UNITS:
            suffix = PARAM_UNITS[t][0]
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                v = v / 1e6 if t == "delay" else v * 100 if t == "probability" else v
            else:
                v = None
            out[f"{col}_{suffix}"] = v
        elif t == "queue":
            q = v if isinstance(v, dict) else {}
            out[col] = f"{q['slots']} slots" if q.get("slots") is not None else \
                f"{q['bytes']} bytes" if q.get("bytes") is not None else None
            out[f"{col}_slots"] = q.get("slots")
            out[f"{col}_bytes"] = q.get("bytes")
        else:
            out[col] = v if v is None or isinstance(v, (int, float, str, bool)) else json.dumps(v)
    return out


def param_unit(column: str, types: Mapping[str, str]) -> str | None:
    for name, t in types.items():
        if t in PARAM_UNITS and column == f"param_{name}_{PARAM_UNITS[t][0]}":
            return PARAM_UNITS[t][1]
        if t == "queue" and column == f"param_{name}_slots":
            return "packets"
        if t == "queue" and column == f"param_{name}_bytes":
            return "bytes"
    return None


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested mapping as `a.b` columns of scalars; a list of scalars as one text (`; `);
    a list of objects is left out (it is an item table of its own where it matters)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        col = f"{prefix}{k}"
        if _scalar(v):
            out[col] = None if isinstance(v, float) and not math.isfinite(v) else v
        elif isinstance(v, Mapping):
            out.update(flatten(v, col + "."))
        elif isinstance(v, (list, tuple)) and all(_scalar(x) for x in v):
            out[col] = "; ".join("" if x is None else str(x) for x in v)
    return out


def _name_of(item: Mapping[str, Any], i: int) -> str:
    for k in _NAME_KEYS:
        v = item.get(k)
        if isinstance(v, (str, int)) and not isinstance(v, bool):
            return str(v)
    return str(i + 1)


def summary_rows(summary: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list[tuple[str, dict]]]]:
    """A summary -> (the run's own numbers, {table: [(entity, its numbers)]}) (pure). A list of
    objects or an object whose values are all objects is an item table; everything else is
    about the run."""
    run: dict[str, Any] = {}
    items: dict[str, list[tuple[str, dict]]] = {}
    for k, v in summary.items():
        if k in _SKIP:
            continue
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, Mapping) for x in v):
            items[k] = [(_name_of(x, i), flatten(x)) for i, x in enumerate(v)]
        elif isinstance(v, Mapping) and v and all(isinstance(x, Mapping) for x in v.values()):
            items[k] = [(str(name), flatten(x)) for name, x in v.items()]
        elif isinstance(v, Mapping):
            run.update(flatten(v, f"{k}."))
        else:
            run.update(flatten({k: v}))
    return run, items


def run_rows(manifest: Mapping[str, Any], summary: Mapping[str, Any] | None, param_types: Mapping[str, str],
             summary_source: str | None) -> RunRows:
    """The rows of one run from its manifest and summary (pure)."""
    tw = manifest.get("traffic_window") or {}
    t0, t1 = as_time(tw.get("start")), as_time(tw.get("end"))
    ctl = manifest.get("controller") or {}
    inv = manifest.get("inventory")
    s = dict(summary or {})
    recomputed = summary is not None and summary_source == "recomputed"
    # the run's own verdict, as `runs list` says it (catalog.verdict); a recomputed one apart
    valid = verdict(manifest.get("status"), None if recomputed else s.get("valid"))
    values = (manifest.get("parameters") or {}).get("values") or {}
    run: dict[str, Any] = {
        "run_id": manifest.get("run_id"), "scenario": manifest.get("scenario"), "campaign": manifest.get("campaign"),
        "status": manifest.get("status"), "valid": valid,
        # a cut-down record without its creation time: the time its id begins with (to the second)
        "started": as_time(manifest.get("created")) or as_time(id_time(str(manifest.get("run_id") or ""))),
        "finished": as_time(manifest.get("finished")), "traffic_start": t0, "traffic_end": t1,
        "traffic_s": round((t1 - t0).total_seconds(), 6) if t0 and t1 else None,
        "ctl_version": ctl.get("ctl_version"), "ctl_commit": ctl.get("commit"),
        "inventory": inv.get("name") if isinstance(inv, Mapping) else None,
        "summary_source": summary_source if summary is not None else None,
        "valid_recomputed": s.get("valid") if recomputed and isinstance(s.get("valid"), bool) else None,
    }
    params = param_columns(values, param_types)
    run.update(params)
    own, tables = summary_rows(s)
    for k, v in own.items():
        if k not in run and k != "valid":
            run[k] = v
    ident = {k: run[k] for k in ITEM_RUN_COLUMNS}
    items = {t: [{**ident, **params, "entity": name, **vals} for name, vals in rows] for t, rows in tables.items()}
    defs = s.get("definitions") if isinstance(s.get("definitions"), Mapping) else {}
    own_defs = own_definitions({str(k): v for k, v in defs.items() if isinstance(v, str)}, run, tables)
    return RunRows(run, items, own_defs)


# ---- samples ----------------------------------------------------------------------------------

def sample_rows(points: Iterable[Mapping[str, Any]], run_id: str, scenario: str,
                traffic_start: dt.datetime | None) -> Iterator[dict[str, Any]]:
    """metrics.jsonl points -> rows of the long `samples` table (pure, one point at a time)."""
    t0_ns = int(traffic_start.timestamp() * 1e9) if traffic_start else None
    for p in points:
        try:
            t_ns = int(p["t"])
            tags = p.get("tags") or {}
            fields = p.get("f") or {}
            m = str(p["m"])
        except (KeyError, TypeError, ValueError):
            continue
        s, rem = divmod(t_ns, 1_000_000_000)
        when = dt.datetime.fromtimestamp(s, dt.timezone.utc) + dt.timedelta(microseconds=rem // 1000)
        base = {"run_id": run_id, "scenario": scenario, "time": when,
                "elapsed_s": round((t_ns - t0_ns) / 1e9, 6) if t0_ns is not None else None, "measurement": m}
        for c in _SAMPLE_TAG_COLUMNS:
            v = tags.get(c)
            base[c] = str(v) if v not in (None, "") else None
        other = ";".join(f"{k}={v}" for k, v in sorted(tags.items()) if k not in _DROPPED_TAGS and v not in (None, ""))
        base["tags"] = other or None
        for k, v in fields.items():
            if isinstance(v, bool):
                value, text = float(v), None
            elif isinstance(v, (int, float)):
                value, text = (float(v) if math.isfinite(v) else None), None
            else:
                value, text = None, None if v is None else str(v)
            yield {**base, "metric": str(k), "value": value, "text": text,
                   "unit": _MEASUREMENT_UNITS.get(m) or (unit_of(str(k)) if value is not None else None)}


# ---- columns and types --------------------------------------------------------------------------

def column_order(rows: Iterable[Mapping[str, Any]], first: Sequence[str] = ()) -> list[str]:
    cols = list(first)
    seen = set(cols)
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                cols.append(k)
    return cols


def column_type(values: Iterable[Any], name: str = "") -> str:
    """bool, int, float, string or time: the one type of a column (mixed numbers and text: string)."""
    kinds = set()
    for v in values:
        if v is None:
            continue
        kinds.add("time" if isinstance(v, dt.datetime) else "bool" if isinstance(v, bool) else
                  "int" if isinstance(v, int) else "float" if isinstance(v, float) else "string")
    if name in TIME_COLUMNS and kinds <= {"time"}:
        return "time"
    if not kinds:      # nothing but missing values: a number when the name spells a unit
        return "float" if unit_of(name) is not None else "string"
    if len(kinds) == 1:
        return kinds.pop()
    if kinds <= {"int", "float"}:
        return "float"
    return "string"


def coerce(v: Any, kind: str) -> Any:
    if v is None:
        return None
    if kind == "float":
        return float(v)
    if kind == "string" and not isinstance(v, str):
        return "true" if v is True else "false" if v is False else \
            iso(v) if isinstance(v, dt.datetime) else str(v)
    return v


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def param_name(column: str, types: Mapping[str, str]) -> str | None:
    """The parameter a `param_...` column holds (None: none of `types`)."""
    for name, t in types.items():
        if column == f"param_{name}" or (t in PARAM_UNITS and column == f"param_{name}_{PARAM_UNITS[t][0]}") or \
                (t == "queue" and column in (f"param_{name}_slots", f"param_{name}_bytes")):
            return name
    return None


def param_description(column: str, types: Mapping[str, str]) -> str:
    name = param_name(column, types)
    if name is None:
        return ""
    flag = "--" + name.replace("_", "-")
    if column.endswith("_slots") and types.get(name) == "queue":
        return f"the run's {flag} in packets (empty: it was given in bytes)"
    if column.endswith("_bytes") and types.get(name) == "queue":
        return f"the run's {flag} in bytes (empty: it was given in packets)"
    if types.get(name) == "queue":
        return f"the run's {flag} as given (N slots or N bytes)"
    unit = PARAM_UNITS.get(types.get(name, ""), (None, None))[1]
    return f"the run's {flag} as resolved (given or its default)" + (f", in {unit}" if unit else "")


def own_definitions(defs: Mapping[str, str], run: Mapping[str, Any],
                    tables: Mapping[str, list[tuple[str, dict]]]) -> dict[str, dict[str, str]]:
    """The definitions of a summary (`definitions`), each given to the table column it is of:
    `table.column` to that table's column; a bare name to the one table that has a column of
    that name (a name in several tables, e.g. `sender_mbps` in connections and flows, defines
    none of them: columns.COLUMNS does). Pure."""
    cols = {"runs": set(run), **{t: {k for _n, vals in rows for k in vals} for t, rows in tables.items()}}
    out: dict[str, dict[str, str]] = {}
    for key, text in defs.items():
        table, dot, column = key.partition(".")
        if dot and table in tables and column in cols[table]:
            out.setdefault(table, {})[column] = text
            continue
        homes = [t for t, c in cols.items() if key in c]
        if len(homes) == 1:
            out.setdefault(homes[0], {})[key] = text
    return out


def _one(by_scenario: Mapping[str, str]) -> str:
    """One definition, or each scenario's when they differ (`rtt-loss-sweep: ...; mptcp-bittorrent: ...`)."""
    texts = list(dict.fromkeys(by_scenario.values()))
    if len(texts) <= 1:
        return texts[0] if texts else ""
    return "; ".join(f"{sc}: {text}" for sc, text in by_scenario.items())


def dictionary_rows(table: str, columns: Sequence[str], types: Mapping[str, str], param_types: Mapping[str, str],
                    described: Mapping[str, Mapping[str, columns_mod.Entry | None]]) -> list[dict[str, Any]]:
    """The `columns` table's rows for one table; `described`: column -> {scenario: (unit, definition)}
    (columns.describe for each scenario whose runs have the column)."""
    out = []
    fixed = _SAMPLE_DESCRIPTIONS if table == "samples" else _TABLE_DESCRIPTIONS
    for c in columns:
        numeric = types.get(c) in ("int", "float") and c != "value"
        entries = {sc: e for sc, e in (described.get(c) or {}).items() if e is not None}
        if c in fixed:
            unit, desc = (unit_of(c) if numeric else None), fixed[c]
        elif c.startswith("param_"):
            unit, desc = param_unit(c, param_types), param_description(c, param_types)
        else:
            units = list(dict.fromkeys(e[0] for e in entries.values() if e[0] is not None))
            unit = "; ".join(units) if units else (unit_of(c) if numeric else None)
            desc = _one({sc: e[1] for sc, e in entries.items()})
        out.append({"table": table, "column": c, "type": types.get(c, "string"), "unit": unit, "description": desc})
    return out


# ---- writers ----------------------------------------------------------------------------------

def _csv_cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return iso(v)
    if isinstance(v, float):
        return repr(v)
    return v


def _json_cell(v: Any) -> Any:
    return iso(v) if isinstance(v, dt.datetime) else v


class TableWriter:
    """Rows of one table, written as they come to an open binary file, in one format. The
    columns and their types are fixed when the writer is made."""

    def __init__(self, f: IO[bytes], fmt: str, columns: Sequence[str], types: Mapping[str, str]):
        if fmt not in FORMATS:
            raise ValueError(fmt)
        self.fmt, self.columns, self.types = fmt, list(columns), dict(types)
        self.rows = 0
        self._f = f
        if fmt == "csv":
            self._text = io.TextIOWrapper(f, encoding="utf-8", newline="", write_through=True)
            self._csv = csv.writer(self._text, lineterminator="\n")
            self._csv.writerow(self.columns)
        elif fmt == "jsonl":
            self._text = io.TextIOWrapper(f, encoding="utf-8", newline="\n", write_through=True)
        else:
            import pyarrow as pa          # optional: `pip install ctl[parquet]`
            import pyarrow.parquet as pq
            self._pa = pa
            self._schema = pa.schema([(c, _arrow_type(pa, self.types.get(c, "string"))) for c in self.columns])
            self._pq = pq.ParquetWriter(f, self._schema)

    def write(self, rows: Sequence[Mapping[str, Any]]) -> None:
        rows = [{c: coerce(r.get(c), self.types.get(c, "string")) for c in self.columns} for r in rows]
        if not rows:
            return
        self.rows += len(rows)
        if self.fmt == "csv":
            self._csv.writerows([[_csv_cell(r[c]) for c in self.columns] for r in rows])
        elif self.fmt == "jsonl":
            self._text.write("".join(json.dumps({c: _json_cell(r[c]) for c in self.columns}, allow_nan=False) + "\n"
                                     for r in rows))
        else:
            self._pq.write_table(self._pa.Table.from_pylist(rows, schema=self._schema))

    def close(self) -> None:
        if self.fmt == "parquet":
            self._pq.close()
        else:
            self._text.flush()
            self._text.detach()


def _arrow_type(pa: Any, kind: str) -> Any:
    return {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "string": pa.string(),
            "time": pa.timestamp("us", tz="UTC")}[kind]


def table_types(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> dict[str, str]:
    return {c: column_type((r.get(c) for r in rows), c) for c in columns}


SAMPLE_TYPES = {**{c: "string" for c in SAMPLE_COLUMNS}, "time": "time", "elapsed_s": "float", "value": "float"}


# ---- writing an export ----------------------------------------------------------------------------

@dataclass
class Source:
    """One run to export: its manifest, its summary (None: none), where the summary came from,
    and its metrics.jsonl (None: not available, e.g. a record copied from the campaign store)."""

    run_id: str
    manifest: dict
    summary: dict | None
    summary_source: str | None
    metrics: Any = None      # a Path


@dataclass
class Written:
    """What `write_export` wrote: rows per table (file name -> rows), runs, runs without samples."""

    files: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    without_samples: list[str] = field(default_factory=list)


_CHUNK = 20000


def _points(path: Any) -> Iterator[dict]:
    with open(path, "rb") as f:
        for line in f:
            try:
                p = json.loads(line)
            except ValueError:
                continue       # a line cut short by a crash: the spool's reader skips it too
            if isinstance(p, dict):
                yield p


def write_export(out_fd: int, shown: str, fmt: str, sources: Iterable[Source],
                 param_types: Any, *, samples: bool = True) -> Written:
    """Write the tables of `sources` (module doc) in `fmt` into the directory `out_fd` (`shown`
    names it in messages), each file written without following a link (controller.safefs).
    `param_types(scenario)` gives a scenario's {parameter: type}. Sources are read one at a
    time: the samples are streamed, only the summary rows are kept until the end."""
    written = Written()
    runs: list[dict] = []
    items: dict[str, list[dict]] = {}
    described: dict[str, dict[str, dict[str, Any]]] = {}     # table -> column -> {scenario: columns.Entry}
    types_of: dict[str, str] = {}
    sample_file = f"samples.{fmt}"
    with contextlib.ExitStack() as stack:
        sw = None
        if samples:
            f = stack.enter_context(new_file_at(out_fd, sample_file, "export file", f"{shown}/{sample_file}"))
            sw = TableWriter(f, fmt, SAMPLE_COLUMNS, SAMPLE_TYPES)
        for src in sources:
            scenario = str(src.manifest.get("scenario") or "")
            types = param_types(scenario) if scenario else {}
            types_of.update(types)
            rr = run_rows(src.manifest, src.summary, types, src.summary_source)
            runs.append(rr.run)
            for t, rows in rr.items.items():
                items.setdefault(t, []).extend(rows)
            for t, rows in (("runs", [rr.run]), *rr.items.items()):
                own = rr.descriptions.get(t, {})
                cols = described.setdefault(t, {})
                for c in {k for r in rows for k in r}:
                    if scenario not in cols.setdefault(c, {}):
                        cols[c][scenario] = columns_mod.describe(t, c, scenario, own)
            written.runs += 1
            if sw is None:
                continue
            if src.metrics is None or not os.path.isfile(src.metrics):
                written.without_samples.append(src.run_id)
                continue
            chunk: list[dict] = []
            for row in sample_rows(_points(src.metrics), src.run_id, scenario, rr.run.get("traffic_start")):
                chunk.append(row)
                if len(chunk) >= _CHUNK:
                    sw.write(chunk)
                    chunk = []
            sw.write(chunk)
        if sw is not None:
            sw.close()
            written.files[sample_file] = sw.rows
    dictionary: list[dict] = []
    tables = {"runs": (runs, RUN_COLUMNS), **{t: (rows, (*ITEM_RUN_COLUMNS,)) for t, rows in items.items()}}
    for table, (rows, first) in tables.items():
        cols = column_order(rows, first)
        if table != "runs":       # parameters right after the run's columns, then the entity
            params = [c for c in cols if c.startswith("param_")]
            cols = [*first, *params, "entity", *[c for c in cols if c not in first and c not in params
                                                 and c != "entity"]]
        types = table_types(rows, cols)
        _write_table(out_fd, shown, f"{table}.{fmt}", fmt, cols, types, rows, written)
        dictionary += dictionary_rows(table, cols, types, types_of, described.get(table, {}))
    if samples:
        dictionary += dictionary_rows("samples", SAMPLE_COLUMNS, SAMPLE_TYPES, {}, {})
    dcols = ["table", "column", "type", "unit", "description"]
    _write_table(out_fd, shown, f"columns.{fmt}", fmt, dcols, {c: "string" for c in dcols}, dictionary, written)
    return written


def _write_table(out_fd: int, shown: str, name: str, fmt: str, cols: Sequence[str], types: Mapping[str, str],
                 rows: Sequence[Mapping[str, Any]], written: Written) -> None:
    with new_file_at(out_fd, name, "export file", f"{shown}/{name}") as f:
        w = TableWriter(f, fmt, cols, types)
        w.write(rows)
        w.close()
    written.files[name] = w.rows
