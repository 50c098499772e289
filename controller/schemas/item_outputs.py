"""Models of the members of `--json` outputs that outputs.py once left as bare objects: a planned
campaign's runs, `ctl cc list`'s algorithms, `ctl inventory check`'s findings, `ctl rack status`'s
leases and reservations, `ctl reproduce`'s campaigns and compared cells, `ctl run`'s conversions,
plan and commands, `ctl scenarios show`'s parameters, a run's parameters (issue 25).

Each is typed from the code that produces it (named in its docstring). The objects stay open
(`extra="allow"`, as in rack_outputs.py): a later version may add keys, never drop or retype one.
Times leave ctl as ISO 8601 (controller/results/wire.py turns Unix seconds into it by key name);
where a value read from outside ctl may be a number that is no time, the type says so.
"""
from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import Field

from controller.schemas.base import Iso, Open

from controller.schemas.rack_outputs import Pipe, QueueSize


# A scenario's parameter value once parsed, in the scenario's base units (controller/scenarios/base.py
# Param.parse; a queue is its QueueSize; a field run's `hosts` is a list of names).
ParamValue = Union[str, int, float, bool, None, QueueSize, list[str]]
ParamValues = Annotated[dict[str, ParamValue], Field(
    description="parameter name (the scenario's, `ctl scenarios show NAME`) -> value: a map because the names "
                "are the scenario's own; values resolved in the scenario's base units (bit/s, us, s, bytes, 0..1), "
                "a queue as {slots} or {bytes}, null: unset")]
GivenValues = Annotated[dict[str, str], Field(
    description="parameter name (the scenario's, `ctl scenarios show NAME`) -> the value as typed on the command "
                "line, units and all (e.g. 20M, 50ms); a map because the names are the scenario's own")]


# ---- ctl campaign plan -----------------------------------------------------------------------------

class PlannedRun(Open):
    """One run of the plan (controller/cli/campaign.py cmd_plan; controller/campaign/plan.py Case)."""
    seq: int = Field(description="its place in the campaign's order, from 1")
    case: int = Field(ge=1, description="the case (one combination of the swept values), from 1")
    repetition: int = Field(description="the repetition of that case")
    parameters: dict[str, str] = Field(description="the case's swept or listed parameters: name -> value as the "
                                                   "campaign file writes it (units and all); a map because the names "
                                                   "are the scenario's own")
    argv: list[str] = Field(description="the scenario arguments the run is given (`ctl run SCENARIO ARGV...`)")
    duration_s: float = Field(description="traffic duration of the run, seconds")


# ---- ctl cc list -----------------------------------------------------------------------------------

class AlgorithmRow(Open):
    """One congestion control (controller/cli/cc.py: controller/reproduce/algorithms.py AlgorithmStatus and
    nodes/congestion/catalog.py Algorithm)."""
    name: str = Field(description="the name to ask for with --cc")
    kind: Literal["kernel", "bpf"] = Field(description="kernel: the kernel has it; bpf: ctl loads its own program "
                                                       "for the run")
    runnable: bool = Field(description="it can run on every endpoint of this rack")
    reason: str = Field(description="how it runs here, or why it cannot")
    label: str = Field(description="how a reader is shown it (e.g. which BBR the kernel's `bbr` is)")
    source: str = Field(description="its BPF source file, or `kernel`")
    defines: list[str] = Field(description="clang -D flags that select this reading of the source")
    title: Optional[str] = Field(description="the algorithm's name in its paper; null: a kernel built-in")
    reference: Optional[str] = Field(description="the paper it comes from; null: a kernel built-in")
    specification: Optional[str] = Field(description="the specification it follows, with its revision; null: the "
                                                     "reference (or a kernel built-in)")
    differences: list[str] = Field(description="every way it differs from that specification on this kernel")
    coupled: Optional[bool] = Field(description="couples the subflows of an MPTCP connection; null: a kernel "
                                                "built-in")
    on_plain_tcp: Optional[str] = Field(description="what it is on a plain TCP socket or a single subflow; null: a "
                                                    "kernel built-in")
    variant_of: Optional[str] = Field(description="the paper's algorithm this is another reading of; null: one of the "
                                                  "papers' algorithms (or a kernel built-in)")
    for_analysis: bool = Field(description="a variant for analysis, never used in the paper's algorithm's place")
    reading: Optional[str] = Field(description="which reading of the paper this program implements")
    built_on_first_use: bool = Field(description="ctl compiles it for an endpoint's kernel when a run first needs it")


# ---- ctl inventory check ---------------------------------------------------------------------------

class Finding(Open):
    """One problem of the inventory file (controller/inventory_check.py Finding)."""
    line: Optional[int] = Field(description="its line in the file, from 1; null: not tied to a line")
    field: str = Field(description="the path of keys (hosts.b1.interfaces[0].address); `(top level)`: the file")
    message: str = Field(description="what is wrong, in ctl's words")
    severity: Literal["error", "warning"] = Field(description="error: the file is invalid; warning: it is valid")


class RoleChoiceOut(Open):
    """How a scenario's host or link parameter is filled on this rack (controller/rack/fit.py RoleChoice)."""
    param: str = Field(description="the scenario's parameter (e.g. client)")
    flag: str = Field(description="its command-line flag (e.g. --client)")
    value: Union[str, int, float, None] = Field(description="the host or link it names on this rack; null: none fits")
    how: str = Field(description="`default`, or how ctl chose it (e.g. `host snd plays a1`)")


class ScenarioFitOut(Open):
    """Whether a scenario runs on the checked rack (controller/rack/fit.py ScenarioFit.to_json)."""
    scenario: str = Field(description="the scenario's name")
    runs: bool = Field(description="true: the rack has what it needs")
    reason: Optional[str] = Field(description="why it does not run here; null: it runs")
    roles: list[RoleChoiceOut] = Field(description="each host or link parameter and what fills it here")


class LockOwner(Open):
    """The owner record of a lock file of this controller (controller/lock.py FileLock: {pid, host,
    purpose, since, state_dir}), as the holder wrote it."""
    pid: Optional[int] = Field(default=None, description="the holder's process")
    host: Optional[str] = Field(default=None, description="the machine the holder runs on")
    purpose: Optional[str] = Field(default=None, description="the command that holds it")
    since: Union[Iso, float, None] = Field(default=None, description="when it took the lock (ISO 8601)")
    state_dir: Optional[str] = Field(default=None, description="the holder's ctl state directory")


class RunningRun(Open):
    """A campaign run marked running on the rack in the lab database (controller/cli/rack.py cmd_status)."""
    campaign: int = Field(description="the campaign's number")
    seq: int = Field(description="the run's position in its campaign, from 1")
    claimed_by: Optional[str] = Field(description="the scheduler that claimed it (user@host:pid, and /RACK when it drives one); null: not recorded")
    lease_until: Union[Iso, float, None] = Field(description="when its claim runs out unless renewed (ISO 8601); "
                                                            "null: no claim")


# ---- ctl rack status -------------------------------------------------------------------------------

class Holder(Open):
    """Who holds (or last held) a rack's lease (controller/rack/lease.py Holder): values read from the lease
    host or the lab database, kept only when well typed."""
    user: str = Field(description="the login of the holder")
    host: str = Field(description="the machine the holder's ctl runs on")
    pid: Optional[int] = Field(description="the holder's process; null: not recorded")
    purpose: str = Field(description="the command that holds it (e.g. ctl run shared-bottleneck)")
    since: Union[Iso, float, None] = Field(description="when it took the lease (ISO 8601); a number: the lease note "
                                                       "held one that is no time, as written; null: not recorded")
    where: str = Field(description="where the lease lives (the lab database, or a host's file)")
    alive: bool = Field(description="false: a stale note of a holder that is gone")


class LeaseEntry(Open):
    """One of the rack's leases (controller/cli/rack.py cmd_status): the rack's, then the host's if any."""
    where: str = Field(description="where the lease lives")
    holder: Optional[Holder] = Field(description="who holds it now; null: free")
    last_holder: Optional[Holder] = Field(description="a stale holder's note (the holder is gone); null: none")
    error: Optional[str] = Field(default=None, description="why the lease could not be read (then the holders are "
                                                           "null)")


class ReservationItem(Open):
    """A reservation of a rack (controller/rack/reservations.py Reservation.to_json). A host book's file is
    writable by anyone with the account: an entry that is not well formed is listed with `problem` set
    (it blocks nothing), its bad values replaced ("?", 0, null)."""
    id: int = Field(description="its number (#N)")
    rack: str = Field(description="the rack's name (its inventory's `name`)")
    user: str = Field(description="the login that booked it")
    host: str = Field(description="the machine it was booked from")
    start: Union[Iso, float, None] = Field(description="ISO 8601; a number: a malformed entry's value that is no "
                                                       "time; null: not a number")
    end: Union[Iso, float, None] = Field(description="ISO 8601; a number: a malformed entry's value that is no time; "
                                                     "null: not a number")
    note: str = Field(description="what for (as booked: escape it before printing it to a terminal)")
    created: Union[Iso, float, None] = Field(description="when it was booked (ISO 8601); 0: not recorded")
    owner: str = Field(description="who it belongs to, as compared: the database login, or user@host")
    checked: bool = Field(description="false: booked before the database recorded owners")
    problem: str = Field(description="why the entry is malformed (then it blocks nothing); empty: well formed")


# ---- ctl reproduce ---------------------------------------------------------------------------------

class PlannedCampaign(Open):
    """One campaign of a reproduction's plan (controller/cli/reproduce.py _plan_json)."""
    key: str = Field(description="the campaign's key in the reproduction (ctl reproduce rerun --campaign KEY)")
    paper: str = Field(description="the paper whose table or figure it reproduces")
    title: str = Field(description="what it reproduces, in words")
    scenario: str = Field(description="the scenario its runs run")
    cases: int = Field(description="combinations of the swept values")
    repetitions: int = Field(description="runs per case")
    runs: int = Field(description="cases x repetitions")
    traffic_s: float = Field(description="seconds of traffic of all its runs")
    overhead_s: float = Field(description="seconds of set-up and restore per run, estimated")
    estimated_rack_s: float = Field(description="seconds of rack time of the campaign, estimated")
    estimated_finish: Iso = Field(description="when it is expected to finish")
    file: str = Field(description="the campaign file written for it")


class CampaignProgress(Open):
    """One campaign of a reproduction and how far it got (controller/cli/reproduce.py cmd_status)."""
    key: str = Field(description="the campaign's key in the reproduction")
    num: int = Field(description="the campaign's number (`ctl campaign status NUM`)")
    id: str = Field(description="the campaign's id (time and name)")
    state: str = Field(description="queued, running, paused, done, cancelled (controller/campaign/store.py "
                                    "CAMPAIGN_STATES)")
    reason: Optional[str] = Field(description="why it is in that state (e.g. cancelled by whom); null: none")
    total: int = Field(description="runs in it")
    done: int = Field(description="runs completed")
    failed: int = Field(description="runs failed")


class CellSide(Open):
    """One reproduction's values of a cell (controller/results/stats.py Stat), in the metric's unit."""
    n: int = Field(ge=0, description="values (runs)")
    mean: Optional[float] = Field(description="null: no value")
    sd: Optional[float] = Field(description="sample standard deviation; null: n < 2")
    ci95: Optional[float] = Field(description="half-width of the 95 % confidence interval of the mean (Student's t); "
                                              "null: n < 2")


class WelchTest(Open):
    """Welch's unequal-variances t-test of mean(b) - mean(a), two-sided (controller/results/stats.py Welch)."""
    t: Optional[float] = Field(description="the t statistic; null: infinite (neither side has any spread)")
    df: Optional[float] = Field(description="degrees of freedom (Welch-Satterthwaite); null: not finite")
    p: float = Field(ge=0, le=1, description="two-sided p-value, before Holm's correction")


class ComparedCell(Open):
    """One cell of two reproductions side by side (controller/reproduce/compare.py Pair)."""
    paper: str = Field(description="the paper's key (mcubic, bbrv3, parallel, mptcp-bt, field)")
    table: str = Field(description="the paper's table or figure (Table 1, Fig. 8, ...)")
    row: str = Field(description="the table's row as the paper labels it (an algorithm, a setting)")
    column: str = Field(description="the table's column as the paper labels it (a rate, a delay, a path)")
    metric: str = Field(description="the metric, its unit in its name (jain_index: none, share_pct: %, "
                                    "mbps: Mbit/s, ratio: none)")
    a: Optional[CellSide] = Field(description="reproduction A's values; null: A has no such cell")
    b: Optional[CellSide] = Field(description="reproduction B's values; null: B has no such cell")
    difference: Optional[float] = Field(description="mean(b) - mean(a), in the metric's unit; null: a side has no "
                                                    "value")
    welch: Optional[WelchTest] = Field(description="the test; null: a side has fewer than two values")
    p_holm: Optional[float] = Field(ge=0, le=1, description="p after Holm's step-down correction over every pair "
                                                            "tested in this comparison; null: not tested")
    alpha: float = Field(description="the level a Holm-adjusted p is compared with")
    status: Literal["differs", "no difference shown", "n < 2: not tested", "only in A", "only in B"] = Field(
        description="differs: Holm-adjusted p < alpha; no difference shown: tested, p >= alpha; n < 2: a side has "
                    "fewer than two values; only in A / only in B: the other has no value")
    flagged: bool = Field(description="status is `differs`")


class VerdictChange(Open):
    claim: str = Field(description="the claim's id")
    a: str = Field(description="its verdict in A")
    b: str = Field(description="its verdict in B")


# ---- ctl run -----------------------------------------------------------------------------------------

class ConversionOut(Open):
    """A value changed on its way to the rack (controller/units.py Conversion): all text, with units."""
    what: str = Field(description="the parameter and where (e.g. bottleneck queue of path1 (both directions))")
    asked: str = Field(description="what was asked for, with units")
    applied: str = Field(description="what is applied, with units")
    reason: str = Field(description="why, naming the limit")


class DryCommand(Open):
    """A command a real run would send (controller/commands.py CommandResult of the dry run)."""
    host: str = Field(description="the inventory host it runs on")
    argv: list[str] = Field(description="the command's words (never a shell string)")
    note: str = Field(description="what it is for; empty: no note")


class MptcpEndpointOut(Open):
    """An MPTCP endpoint to configure on a host (nodes/mptcp.py MptcpEndpoint)."""
    address: str = Field(description="the IP address of the endpoint")
    dev: Optional[str] = Field(description="the interface; null: the kernel's choice")
    flags: list[str] = Field(description="ip mptcp endpoint flags (subflow, signal, backup, fullmesh)")
    id: Optional[int] = Field(description="the endpoint id; null: the kernel assigns one")
    port: Optional[int] = Field(description="the port a signal endpoint listens on; null: none")


class EndpointPlan(Open):
    """Desired MPTCP state of one endpoint host (nodes/mptcp.py EndpointConfig)."""
    mptcp: bool = Field(description="false: a plain-TCP host, its MPTCP state left alone")
    subflows: int = Field(description="ip mptcp limits subflows")
    add_addr_accepted: int = Field(description="ip mptcp limits add_addr_accepted")
    endpoints: list[MptcpEndpointOut] = Field(description="the MPTCP endpoints to configure")
    sysctls: dict[str, str] = Field(description="sysctl name -> value set for the run")
    congestion_controls: list[str] = Field(description="the congestion controls the host must offer")


class FlowPlan(Open):
    """One traffic flow (controller/traffic/iperf3.py FlowSpec)."""
    name: str = Field(description="the flow's name in the summary (e.g. mptcp, tcp1)")
    protocol: Literal["tcp", "mptcp", "udp"] = Field(description="the transport")
    client: str = Field(description="the host that sends")
    server: str = Field(description="the host that receives")
    server_addr: str = Field(description="the address the client connects to")
    port: int = Field(description="the server's port (iperf3 -p)")
    client_addr: Optional[str] = Field(description="the address the client binds; null: the kernel's choice")
    cc: Optional[str] = Field(description="congestion control; null: the host's default")
    duration_s: Optional[float] = Field(description="seconds of traffic; null: `bytes` bounds it")
    bytes: Optional[int] = Field(description="bytes to send; null: `duration_s` bounds it")
    streams: int = Field(description="parallel streams (iperf3 -P)")
    start_delay_s: float = Field(description="seconds after the traffic start it begins")
    udp_rate_bps: Optional[int] = Field(description="UDP target rate, bit/s; null: not UDP")
    link: Optional[str] = Field(description="the link a single-path flow crosses; null: several")
    interval_s: float = Field(description="iperf3's report interval, seconds")
    socket_buffer: Optional[int] = Field(description="iperf3 -w, bytes; null: the kernel's")
    omit_s: float = Field(description="seconds omitted at the start (iperf3 -O)")


class RunPlanOut(Open):
    """The pure plan of a run (controller/scenarios/base.py RunPlan.to_json)."""
    links: dict[str, Pipe] = Field(description="<link>.<forward|reverse> -> the pipe's configuration")
    endpoints: dict[str, EndpointPlan] = Field(description="host -> its MPTCP configuration")
    flows: list[FlowPlan] = Field(description="the traffic, one flow each")
    sample_ifaces: dict[str, list[str]] = Field(description="host -> the interfaces its sampler reads")
    duration_s: float = Field(description="traffic duration, seconds")
    notes: list[str] = Field(description="what the plan says about itself (assumptions, choices)")
    mptcp_hosts: list[str] = Field(description="hosts whose MPTCP events are monitored")
    conversions: list[ConversionOut] = Field(description="every value changed on its way to the rack")


# ---- ctl scenarios show ------------------------------------------------------------------------------

class ShownBounds(Open):
    """The default and bounds as `ctl scenarios show` prints them, with units ("-": none)."""
    default: str = Field(description="the default with its unit")
    min: str = Field(description="the lowest value with its unit")
    max: str = Field(description="the highest value with its unit")


class ParameterShown(Open):
    """One parameter of a scenario (controller/scenarios/base.py Scenario.describe_json)."""
    name: str = Field(description="its name in parameter maps (run records, campaign files)")
    flag: str = Field(description="its command-line flag (--name)")
    type: Literal["rate", "duration", "delay", "probability", "size", "queue", "int", "choice", "name", "host",
                  "link", "path"] = Field(description="what it holds: rate (bit/s), duration (s), delay (us), "
                                                      "probability (0..1), size (bytes), queue (slots or bytes), int, "
                                                      "choice, name, host, link, path")
    default: Optional[str] = Field(description="the default as typed (units and all); null: unset unless given")
    help: str = Field(description="its help text")
    choices: Optional[list[str]] = Field(description="the values it may take; null: any of its type")
    min: Optional[str] = Field(description="the lowest value, in the type's base unit (bit/s, us, s, bytes, 0..1); "
                                           "null: none")
    max: Optional[str] = Field(description="the highest value, in the type's base unit; null: none")
    shown: ShownBounds = Field(description="default, min and max as `ctl scenarios show` prints them")
