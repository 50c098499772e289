"""Models of the `--json` data of the commands that act on a rack's links, on field loggers and on
InfluxDB: `ctl link set|reset|show|measure`, `ctl field start|status|stop|report`, `ctl metrics push`
(their schemas in controller/schemas/output/ are generated from these; outputs.py maps the commands).

Typed from the real outputs (controller/rack/links.py, controller/field/host.py, nodes/fieldlog/daemon.py,
controller/field/stats.py, controller/cli/metrics.py) and checked against them by the integration tests
that run the commands (tests/integration/test_links.py, test_field_mode.py, test_field_mm.py,
test_influx_outage.py) and the unit tests of the recorded field run. Keys ctl's own code shapes are
named; the objects stay open (`extra="allow"`): a later version may add keys. The envelope turns Unix
seconds into ISO 8601 (`Iso`); a `*_ns` value stays Unix nanoseconds.
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import Field

from controller.schemas.base import Iso, Open


# ---- ctl link ----------------------------------------------------------------------------------

class QueueSize(Open):
    """The drop-tail queue: in packets (slots) or in bytes, one of the two."""
    slots: Optional[int] = Field(default=None, ge=1, description="queue length in packets")
    bytes: Optional[int] = Field(default=None, ge=1, description="queue length in bytes")


class Pipe(Open):
    """One direction's shaping (bridges/base.py PipeConfig)."""
    bw_bps: Optional[int] = Field(description="rate in bit/s; null: unlimited")
    delay_us: int = Field(ge=0, description="one-way delay added, microseconds")
    plr: float = Field(ge=0, le=1, description="random packet loss rate, 0..1")
    queue: QueueSize
    burst_bytes: Optional[int] = Field(default=None, description="token bucket burst in bytes (tc); null: the back-end's")
    mask: Optional[str] = Field(default=None, description="dummynet per-flow queues (e.g. dst-ip 0xffffffff); "
                                                          "null: none")
    sched: Optional[str] = Field(default=None, description="dummynet scheduler (fifo, wf2q+, rr, qfq, fq_codel, "
                                                           "fq_pie); null: the default")


Counters = dict[str, Union[int, float, None]]


class LinkChange(Open):
    """One change of a bridge's pipes (also a line of the state dir's link-changes.jsonl)."""
    t: Iso = Field(description="when the change was made")
    action: Literal["set", "reset"]
    inventory: str = Field(description="the inventory's name")
    link: Optional[str] = Field(default=None, description="the link changed (when one)")
    links: Optional[list[str]] = Field(default=None, description="the links changed on this bridge (when several)")
    bridge: str = Field(description="the bridge host that shapes the link(s)")
    kind: str = Field(description="the shaper back-end: dnpipe, tc, dummynet")
    directions: list[Literal["forward", "reverse"]]
    before: dict[str, Optional[Pipe]] = Field(description="each pipe (<link>.<direction>) before the change; "
                                                          "null: unshaped")
    after: dict[str, Optional[Pipe]] = Field(description="each pipe (<link>.<direction>) after, read back; "
                                                         "null: unshaped")


class Direction(Open):
    shaped: bool = Field(description="a pipe is configured for this direction")
    config: Pipe = Field(description="its configuration (the defaults when unshaped)")
    counters: Counters = Field(description="the pipe's counters as the back-end reads them (tx_pkts, "
                                           "drop_queue_pkts, queue_pkts, ...); {}: none")


class LinkShown(Open):
    bridge: str
    kind: str
    directions: dict[Literal["forward", "reverse"], Direction]


class MeasuredRtt(Open):
    configured_ms: float = Field(description="the two directions' configured delays added, ms")
    min_ms: Optional[float]
    avg_ms: Optional[float]
    max_ms: Optional[float]
    mdev_ms: Optional[float]
    jitter_ms: Optional[float]
    replies: Optional[int]
    sent: Optional[int]
    warmup_ms: list[float] = Field(description="RTTs of the uncounted warm-up pings, ms")


class MeasuredThroughput(Open):
    configured_bps: Optional[int] = Field(description="the forward pipe's rate, bit/s; null: unlimited")
    wire_bps: Optional[float] = Field(description="bit/s the receiver's interface counted in the test's middle")
    streams: int
    tcp_receiver_bps: Optional[float]
    tcp_sender_bps: Optional[float]
    congestion: Optional[str]
    retransmits: Optional[int]


class MeasuredLoss(Open):
    configured: float = Field(ge=0, le=1, description="the forward pipe's loss rate, 0..1")
    packets: Optional[int]
    lost: Optional[int]
    measured: Optional[float] = Field(description="lost / packets; null: no packet counted")
    ci95: list[float] = Field(min_length=2, max_length=2, description="Wilson 95 % interval of the loss rate")
    consistent: Optional[bool] = Field(description="the configured rate lies in ci95")
    udp_rate_bps: int


class LinkMeasured(Open):
    link: str
    client: str
    server: str
    configured: dict[Literal["forward", "reverse"], Pipe]
    rtt: MeasuredRtt
    throughput: MeasuredThroughput
    loss: MeasuredLoss
    commands: int = Field(description="commands issued for the measurement")


# ---- ctl field ---------------------------------------------------------------------------------

class HostError(Open):
    """A host the command could not act on."""
    error: str
    reachable: Optional[bool] = Field(default=None, description="false: SSH failed")
    state: Optional[str] = Field(default=None, description="unreachable or error (ctl field status)")


class LoggerStarted(Open):
    action: Literal["started", "resumed", "already-running"]
    run_id: Optional[str]
    pid: Optional[int]
    seq: Optional[int] = Field(default=None, description="the second of the run the logger starts at")
    gap: Optional[list[int]] = Field(default=None, description="[from, to] seconds not logged before a resume")


class FieldStarted(Open):
    run_id: Optional[str] = Field(description="the field run's id; null: every host was already logging")
    record: Optional[str] = Field(description="its record directory")
    hosts: dict[str, Union[LoggerStarted, HostError]]


class LastSecond(Open):
    seq: Optional[int]
    t_ns: int = Field(description="Unix nanoseconds (host clock)")
    age_s: float
    modem_ok: Optional[bool]


class LoggerStatus(Open):
    """A host's logger and current run (nodes/fieldlog/daemon.py status)."""
    root: str = Field(description="the field directory on the host")
    now_ns: int = Field(description="the host's clock, Unix nanoseconds")
    logger_running: bool
    pid: Optional[int]
    run_id: Optional[str]
    state: str = Field(description="logging, unfinished (start resumes it), completed, stopped, no-run, unknown")
    status: Optional[str] = Field(default=None, description="the run's own status (state.json)")
    started_ns: Optional[int] = Field(default=None, description="the run's start, Unix nanoseconds")
    duration_s: Optional[float] = None
    spool_points: Optional[int] = None
    pushed_points: Optional[int] = None
    pending_points: Optional[int] = Field(default=None, description="points not yet acknowledged by InfluxDB")
    push_error: Optional[str] = None
    last: Optional[LastSecond] = Field(default=None, description="the last logged second")
    modem_ok_last_min: Optional[str] = Field(default=None, description="seconds with a radio sample / seconds, "
                                                                        "over the last 60 logged")


class RunState(Open):
    """A run's state file on the host (state.json)."""
    status: Optional[str] = Field(default=None, description="running, completed, stopped")
    stop_reason: Optional[str] = None
    last_seq: Optional[int] = Field(default=None, description="the last second logged")
    ended_ns: Optional[int] = Field(default=None, description="Unix nanoseconds")
    starts: Optional[list[dict[str, Union[int, bool, None, list[int]]]]] = Field(
        default=None, description="each logger start: t_ns, pid, seq, resumed, gap")


class LoggerStopped(Open):
    action: Literal["stopped", "killed", "closed", "not-running"]
    run_id: Optional[str]
    pid: Optional[int] = None
    state: Union[RunState, str, None] = Field(default=None, description="the run's state on the host (state.json); "
                                                                         "not-running: the logger's state word")


class Table1Row(Open):
    host: str
    workload: Optional[str]
    seconds_logged: int
    seconds_spanned: int
    seconds_not_logged: int
    radio_samples: int
    radio_missing_s: int
    bandwidth_kbps: Optional[float]
    download_kbps: Optional[float]
    rtt_ms: Optional[float]
    jitter_ms: Optional[float]
    quality_metric: Optional[str]
    quality_mean_db: Optional[float]
    quality_sd_db: Optional[float]
    handovers: int
    handovers_by_kind: dict[str, int]


class DownloadPercentiles(Open):
    host: str
    n: int
    mean_kbps: Optional[float]


class Handover(Open):
    """A handover detected over the run's radio series (nodes/modem/handover.py HandoverEvent)."""
    kind: str
    time: Iso = Field(description="when the serving cell / technology changed")
    before_cell_id: Optional[str] = None
    after_cell_id: Optional[str] = None
    metric: Optional[str] = None


class FieldEvent(Open):
    """A field_event point of the run (gap, late, modem-lost, modem-back, modem-found, ...)."""
    t_ns: int = Field(description="Unix nanoseconds")
    event: str
    seq: Optional[int] = None
    detail: Optional[str] = None


class HostHandover(Open):
    """A handover the host's logger wrote as it happened (its handover point)."""
    t_ns: int = Field(description="Unix nanoseconds")
    kind: str
    detected: str = Field(description="host")


class FieldParameters(Open):
    hosts: list[str]
    workload: str
    duration_s: Optional[float]
    server: Optional[str]
    rate: Optional[str]
    torrent: Optional[str]
    ping: Optional[str]
    interval_s: float


class UnparsedLines(Open):
    """Lines of one source's output the field logger did not understand (controller/field/stats.py
    unparsed_lines)."""
    lines: int = Field(ge=0, description="how many, over the logged seconds (count)")
    first: list[str] = Field(description="the first few as the tool printed them (control characters removed, at "
                                         "most 160 characters each)")


class RefusedInputs(Open):
    gps_reports_skipped: Optional[int] = Field(description="gpsd reports refused; null: no GPS")
    radio_values_out_of_range: int
    radio_samples_flagged: int
    unparsed_lines: dict[str, UnparsedLines] = Field(
        default_factory=dict, description="per source (ping, iperf3, webtorrent): its lines the logger did not "
                                          "understand; a source absent: not counted (a logger before this count)")


class FieldReport(Open):
    """The field report (controller/field/stats.py report_data) as summary.json holds it."""
    scenario: Literal["field"]
    run_id: str
    status: Optional[str]
    parameters: Optional[FieldParameters]
    table1: list[Table1Row]
    download_percentiles: list[DownloadPercentiles]
    handovers: dict[str, list[Handover]]
    host_detected_handovers: dict[str, list[HostHandover]]
    events: dict[str, list[FieldEvent]]
    refused_inputs: dict[str, RefusedInputs]
    definitions: dict[str, str]


# ---- ctl metrics push --------------------------------------------------------------------------

class Pushed(Open):
    run: str = Field(description="the run's id")
    sent_now: int = Field(ge=0, description="points sent by this command")
    sent_total: int = Field(ge=0, description="points of the run InfluxDB has acknowledged, in all")
    pending: int = Field(ge=0, description="points still to send")


RACK_OUTPUTS: dict[str, Any] = {
    "link set": LinkChange,
    "link reset": list[LinkChange],
    "link show": dict[str, LinkShown],
    "link measure": LinkMeasured,
    "field start": FieldStarted,
    "field status": dict[str, Union[LoggerStatus, HostError]],
    "field stop": dict[str, Union[LoggerStopped, HostError]],
    "field report": FieldReport,
    "metrics push": list[Pushed],
}
