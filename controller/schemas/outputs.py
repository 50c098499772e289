"""JSON Schemas of what `--json` prints, one per command, generated from the models below like
the inventory's (`python -m controller.schemas` writes them to controller/schemas/output/).

Every command prints one envelope (controller/cli/common.py): `format`, `command`, `ctl`
(version, commit), `time` (ISO 8601 UTC) and `data`, the command's own output, whose model is
`OUTPUTS[command]`. Models are strict where ctl's own code shapes the output (the envelope,
`ctl runs`, the run's provenance) and name the keys a script may rely on elsewhere (more keys
may come: `extra="allow"`). Every time in `data` is ISO 8601 with a zone (`Iso`); a duration
is seconds. tests/unit/controller/cli/test_json_envelope.py validates real outputs against
these files and keeps the files in sync with the models.
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from controller.schemas.base import Iso, Open

from controller.schemas.item_outputs import (AlgorithmRow, CampaignProgress, ComparedCell, ConversionOut, DryCommand,
                                             Finding, GivenValues, Holder, LeaseEntry, LockOwner, ParameterShown, ParamValue,
                                             ParamValues, RunningRun, ScenarioFitOut,
                                             PlannedCampaign, PlannedRun, ReservationItem, RunPlanOut, VerdictChange)
from controller.schemas.probe_outputs import ProbeReportOut
from controller.schemas.parse_outputs import ParseData, parse_conditions
from controller.schemas.rack_outputs import RACK_OUTPUTS


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Ctl(Strict):
    version: str = Field(description="ctl's version")
    commit: Optional[str] = Field(description="ctl's git commit (+dirty: with local changes); null: unknown")


# ---- ctl runs -------------------------------------------------------------------------------

class RunListed(Strict):
    run_id: str
    scenario: Optional[str]
    campaign: Optional[str]
    status: Optional[str] = Field(description="completed, invalid, failed, aborted, error, running; a field run: "
                                              "logging, stopped, completed")
    valid: Optional[bool]
    started: Optional[Iso]
    finished: Optional[Iso]
    inventory: Optional[str] = Field(description="the rack's inventory name")
    parameters: dict[str, ParamValue] = Field(
        description="the parameters given, as typed (the others at their defaults): parameter name (the scenario's) "
                    "-> value, a map because the names are the scenario's own; a field run: its options (hosts, "
                    "workload, duration_s, ...)")
    record: str = Field(description="the record directory")


class RunsExport(Strict):
    out: str
    format: Literal["csv", "jsonl", "parquet"]
    runs: int
    files: dict[str, int] = Field(description="file name -> rows written")
    without_samples: list[str] = Field(description="runs exported without samples (no metrics.jsonl here)")
    missing: list[str] = Field(description="completed runs of the campaign that have no record here nor in the store")


class RunsPlot(Strict):
    run_id: str
    record: str = Field(description="the record directory the figures were drawn from (only read)")
    out: str = Field(description="the directory the figures were written to")
    formats: list[Literal["png", "pdf", "svg"]]
    dpi: int = Field(description="resolution of raster images, dots per inch")
    files: list[str] = Field(description="every file written")


class RecordCtl(Strict):
    version: Optional[str] = Field(description="the version of the ctl that made the run (null: not recorded)")
    commit: Optional[str]


class Traffic(Strict):
    start: Optional[Iso]
    end: Optional[Iso]
    duration_s: Optional[float]


class Inventory(Strict):
    name: Optional[str]
    file: Optional[str]


class Parameters(Strict):
    given: GivenValues
    values: ParamValues


class Provenance(Strict):
    run_id: Optional[str]
    scenario: Optional[str]
    campaign: Optional[str]
    status: Optional[str]
    started: Optional[Iso]
    finished: Optional[Iso]
    traffic: Traffic
    ctl: RecordCtl
    inventory: Inventory
    parameters: Parameters
    record_format: Optional[int]
    summary_format: int


class SummaryDocument(Open):
    """summary.json: the scenario's summary (its own keys), its provenance and units."""

    scenario: str
    valid: Optional[bool] = None
    provenance: Provenance
    units: dict[str, str] = Field(description="field name -> unit")


# ---- ctl run ---------------------------------------------------------------------------------

class RunDone(Open):
    """`ctl run` (controller/cli/run.py cmd_run)."""
    run_id: str
    status: str = Field(description="completed, invalid, failed, aborted, error")
    record: Optional[str] = Field(description="the record directory")
    error: Optional[str] = Field(description="why the run did not complete; null: it did")
    summary: Optional[dict[str, Any]] = Field(
        description="deliberately open: the run's summary.json (its provenance and units: `ctl runs show --json`'s "
                    "data), else the scenario's own summary; its keys are the scenario's, described on the "
                    "Scenarios page and by the summary's `definitions`; null: no summary")
    conversions: list[ConversionOut] = Field(description="every value changed on its way to the rack")


class RunDry(Open):
    """`ctl run --dry-run` (controller/cli/run.py dry_run_json)."""
    dry_run: Literal[True]
    run_id: str
    status: str = Field(description="the dry run's outcome (completed: every command was planned)")
    error: Optional[str] = Field(description="why the dry run stopped; null: it did not")
    parameters: ParamValues
    conversions: list[ConversionOut] = Field(description="every value changed on its way to the rack")
    notes: list[str]
    plan: RunPlanOut
    commands: list[DryCommand] = Field(description="every command per host, as a real run would send them")


# ---- the others: the keys a script may rely on --------------------------------------------------

class ScenarioListed(Strict):
    name: str
    title: str


class ScenarioShown(Open):
    name: str
    title: str
    reference: str = Field(description="the paper or source the experiment follows")
    description: str
    parameters: list[ParameterShown] = Field(description="every parameter, the common ones (duration) included")


class CcList(Open):
    rack: str
    endpoints: list[str]
    algorithms: list[AlgorithmRow] = Field(description="kernel built-ins, then the papers' algorithms, then the "
                                                       "variants for analysis")


class ShippedFiles(Strict):
    dir: str = Field(description="where they are (the checkout's folder, or the installed package's)")
    files: list[str] = Field(description="their names, found by name where a file is asked for")


class Shipped(Strict):
    inventory: ShippedFiles = Field(description="the inventories (-i NAME)")
    campaigns: ShippedFiles = Field(description="the campaign files (ctl campaign plan|submit NAME)")


class SettingShown(Open):
    """One setting (controller/settings.py Setting): flag > environment > config file > default."""
    value: Optional[str] = Field(description="its value (a database URL without its password); null: unset")
    source: str = Field(description="flag, environment (CTL_...), config file (PATH) or default: ...")


class ConfigShown(Open):
    checkout: bool
    config_file: Optional[str]
    settings: dict[str, SettingShown] = Field(description="setting name -> its value and where it came from")
    shipped: Shipped = Field(description="the files ctl ships, found by name where a file is asked for")


class LabStatus(Open):
    inventory: str
    up: bool


class LabUp(Open):
    """`ctl lab up`: the virtual rack built (or repaired); a failure is an error on stderr, not this."""
    inventory: str = Field(description="the inventory's name")
    up: Literal[True]
    namespaces: list[str] = Field(description="the network namespaces of the rack")
    daemons: int = Field(ge=0, description="how many daemons of the rack run (sshd per host, InfluxDB, ...)")
    ssh_hosts: list[str] = Field(description="the hosts answering SSH")


class LabDown(Open):
    """`ctl lab down`: what lab.json recorded as created, removed."""
    inventory: str = Field(description="the inventory's name")
    up: Literal[False]
    removed: list[str] = Field(description="every namespace, link and daemon removed; []: the rack was not up")


class InitHost(Strict):
    name: str
    role: Literal["endpoint", "bridge"]
    address: Optional[str] = Field(description="its management address; null: left to fill in")


class Placeholder(Strict):
    line: int = Field(ge=1, description="its line in `text`, from 1")
    value: str = Field(description="the <...> marker, which `ctl inventory check` refuses until replaced")


class InventoryInit(Strict):
    """`ctl inventory init`: the skeleton written (FILE) or only printed here (no FILE)."""
    file: Optional[str] = Field(description="the file written; null: none (the text is only in `text`)")
    name: str = Field(description="the rack's name")
    shaper: Literal["dummynet", "tc", "dnpipe"]
    hosts: list[InitHost]
    to_fill: list[Placeholder] = Field(description="every value ctl could not know, to fill in")
    text: str = Field(description="the inventory (YAML with comments)")


class InventoryCheck(Open):
    file: str
    valid: bool
    errors: list[Finding] = Field(description="the problems that make the file invalid")
    warnings: list[Finding] = Field(description="problems that leave it valid")
    scenarios: Optional[list[ScenarioFitOut]] = Field(
        default=None, description="a valid file: whether each scenario runs on the rack it describes; absent: invalid")
    probe: Optional[ProbeReportOut] = Field(
        default=None, description="--probe: what the hosts said and which scenarios can run; absent without --probe")


class CampaignPlanned(Open):
    name: str
    scenario: str
    cases: int
    repetitions: int
    runs: list[PlannedRun] = Field(description="every run, in the order they will run")
    racks: list[str] = Field(description="the racks it may run on")
    rack_group: Optional[str] = Field(description="the rack group it runs on (any free rack of it); null: none")
    order: Literal["random", "sequential"] = Field(description="the order of the runs")
    seed: Optional[int] = Field(description="the shuffle's seed (random order; drawn now unless the file gives it, "
                                           "submit draws its own); null: sequential")
    pause_s: float = Field(description="pause between runs, seconds")
    window: Optional[str] = Field(description="the daily stretch runs are limited to (HH:MM-HH:MM); null: any time")
    overhead_s: float = Field(description="set-up and restore per run, seconds (estimated)")
    estimated_rack_s: float = Field(description="rack time of the campaign, seconds (estimated)")
    traffic_s: float = Field(description="traffic time of all its runs, seconds")
    not_before: Optional[Iso] = Field(description="it starts no earlier than this; null: now")
    queued_ahead: int = Field(description="campaigns queued before it on this rack (it finishes after them)")
    estimated_finish_local: Iso = Field(description="estimated_finish in this machine's zone")
    estimated_finish: Iso


class CampaignSubmitted(Open):
    num: int
    id: str
    runs: int
    estimated_finish: Iso


class CampaignState(Open):
    num: int
    id: str
    state: str


class MissingRecord(Strict):
    seq: int = Field(description="the run's number in the campaign")
    run_id: str
    record: str = Field(description="where its record is (directory, and the controller that ran it)")


class CampaignExported(Strict):
    """`ctl campaign export` (exit 1 when `missing` is not empty)."""
    num: int
    id: str
    out: str = Field(description="the directory written (one sub-directory per run)")
    written: int = Field(ge=0, description="records written")
    copied_local: int = Field(ge=0, description="of them, copied from this controller's own records")
    completed: int = Field(ge=0, description="runs of the campaign that are done")
    store: str = Field(description="the campaign store read (the lab database without its password, or the file)")
    missing: list[MissingRecord] = Field(description="completed runs whose record is neither in the store nor here")


class DaemonCampaign(Strict):
    num: int
    id: str
    state: str = Field(description="queued, running, paused, done, cancelled")
    total: int = Field(ge=0, description="runs of the campaign")
    done: int = Field(ge=0, description="runs done")
    failed: int = Field(ge=0, description="runs failed")
    pending: int = Field(ge=0, description="runs still to run")


class DaemonEnded(Strict):
    """`ctl campaign daemon --json`: one document when the daemon ends (nothing while it runs: its log
    lines go to stderr): idle with --exit-when-idle, or stopped by SIGTERM (systemd) or SIGINT."""
    pid: int
    rack: Optional[str] = Field(description="the rack it was bound to (--inventory); null: every one-rack "
                                            "campaign, each on its own inventory")
    store: str = Field(description="the campaign store (the lab database without its password, or the file)")
    started: Iso
    ended: Iso
    exit: Literal["idle", "SIGTERM", "SIGINT"] = Field(description="why it ended: idle (--exit-when-idle, nothing "
                                                                   "queued or running) or the signal")
    campaigns: list[DaemonCampaign] = Field(description="every campaign it drove, as it left it; []: none")


class CampaignStatus(Open):
    num: int
    id: str
    state: str


class Report(Open):
    html: str = Field(description="the HTML report's file")
    markdown: str = Field(description="the Markdown report's file")
    figure_formats: list[Literal["png", "pdf", "svg"]] = Field(description="the formats its figures were written in")
    dpi: int = Field(description="resolution of raster figures, dots per inch")


class NotRunnableOut(Open):
    """A part of a paper that cannot run on this rack (controller/reproduce/design.py NotRunnable)."""
    paper: str
    what: str = Field(description="the table, figure or experiment")
    reason: str = Field(description="why it cannot run here")


class AlgorithmStatusOut(Open):
    """Whether a congestion control runs on this rack (controller/reproduce/algorithms.py AlgorithmStatus)."""
    name: str
    kind: Literal["kernel", "bpf"] = Field(description="kernel: the kernel has it; bpf: ctl loads its own program")
    runnable: bool
    reason: str = Field(description="how it runs here, or why it cannot")
    label: str = Field(description="how a reader is shown it")


class ReproducePlan(Open):
    """`ctl reproduce --dry-run` (controller/cli/reproduce.py _plan_json); queued and reported add to it."""
    mode: str = Field(description="quick, full, smoke or deviations")
    papers: list[str]
    campaigns: list[PlannedCampaign] = Field(description="the campaigns, in the order they run")
    runs: int = Field(description="runs of all the campaigns")
    estimated_rack_s: float = Field(description="rack time of all the campaigns, seconds (estimated)")
    estimated_finish: Optional[Iso] = Field(description="when the last campaign is expected to finish; null: none "
                                                        "planned")
    not_runnable: list[NotRunnableOut] = Field(description="what the papers have that cannot run on this rack, and why")
    notes: dict[str, list[str]] = Field(description="paper -> how this mode's design differs from the paper's "
                                                    "(values, repetitions, algorithms)")
    algorithms: dict[str, AlgorithmStatusOut] = Field(description="congestion control name -> whether it runs here")


class ReproduceQueued(ReproducePlan):
    """`ctl reproduce` without --dry-run: the plan, queued."""

    id: str = Field(description="the reproduction (`ctl reproduce status ID`)")
    campaign_ids: list[str] = Field(description="the campaigns queued, in order")


class Verdict(Open):
    paper: str
    claim: str = Field(description="the claim's id (controller/reproduce/verdicts.py)")
    status: str = Field(description="reproduced, not reproduced, inconclusive, not measured, not runnable here, ...")
    strength: Optional[str] = Field(description="how strongly the numbers say it (e.g. no CI: one run a cell)")


class ReproductionReport(Open):
    """A reproduction's report written (`ctl reproduce report`, and `ctl reproduce` or `reproduce rerun`
    when its campaigns ran in the foreground)."""

    id: str = Field(description="the reproduction")
    html: str = Field(description="the HTML report's file")
    markdown: str = Field(description="the Markdown report's file")
    json_file: str = Field(alias="json", description="measured.json: the cells and verdicts")
    figure_formats: list[Literal["png", "pdf", "svg"]]
    dpi: int = Field(description="resolution of raster figures, dots per inch")
    verdicts: list[Verdict]


class ReproduceReported(ReproductionReport, ReproduceQueued):
    """`ctl reproduce` that ran its campaigns here: the plan queued and the report written."""


class RerunCampaign(Open):
    key: str = Field(description="the campaign's key in the reproduction")
    num: int = Field(description="the campaign queued again (`ctl campaign status NUM`)")
    id: str
    runs: int
    replaces_num: int = Field(description="the cancelled campaign it replaces")
    replaces_id: str


class ReproduceRerun(Open):
    id: str = Field(description="the reproduction")
    campaigns: list[RerunCampaign] = Field(description="per campaign queued again")
    runs: int
    estimated_rack_s: float = Field(description="seconds of rack time of the campaigns queued again")


class ReproduceRerunReported(ReproductionReport, ReproduceRerun):
    """`ctl reproduce rerun` that ran the campaigns here: what was queued and the report written."""


class ReproduceStatus(Open):
    id: str = Field(description="the reproduction")
    mode: str = Field(description="quick, full, smoke or deviations")
    papers: list[str]
    runs: int = Field(description="runs of all its campaigns")
    done: int = Field(description="runs completed")
    failed: int = Field(description="runs failed")
    eta_s: float = Field(description="seconds until the last campaign ends, estimated; 0: none active")
    campaigns: list[CampaignProgress] = Field(description="per campaign, in order")
    scheduler: Optional[LockOwner] = Field(description="the campaign scheduler running now on this controller; "
                                                      "null: none")


class ReproduceCompare(Open):
    a: str
    b: str
    cells: list[ComparedCell] = Field(description="every cell of either, matched by (paper, table, row, column, "
                                                  "metric), sorted")
    flagged: int = Field(description="cells whose difference is shown (status differs)")
    verdict_changes: list[VerdictChange] = Field(description="claims whose verdict differs, by claim")


class RackStatus(Open):
    """`ctl rack status` (controller/cli/rack.py cmd_status)."""
    rack: str
    group: Optional[str] = Field(description="the rack group of the inventory; null: none")
    lease_where: str = Field(description="where the rack's lease lives")
    database: Optional[str] = Field(description="the lab database (its URL without a password); null: none")
    lease: Optional[Holder] = Field(description="who holds the rack's lease now; null: free or not read")
    last_holder: Optional[Holder] = Field(description="a stale note of the lease's last holder; null: none")
    leases: list[LeaseEntry] = Field(description="the rack's lease, then its host lease if it has one")
    reservations: list[ReservationItem] = Field(description="reservations ahead; [] also when they could not be "
                                                            "read (then reservations_error says why)")
    reservations_error: Optional[str] = Field(default=None, description="why the reservations could not be read")
    lease_error: Optional[str] = Field(default=None, description="why the rack's lease could not be read")
    machine_lock: Optional[LockOwner] = Field(description="who holds this machine's lock of the rack; null: nobody "
                                                          "(or it could not be read: machine_lock_error)")
    machine_lock_error: Optional[str] = Field(default=None, description="why this machine's rack lock could not be "
                                                                        "read")
    runs: list[RunningRun] = Field(description="campaign runs marked running on the rack in the lab database; []: "
                                               "none, or no lab database")


class Reservation(ReservationItem):
    """A reservation (`ctl rack reserve` prints the one booked; `ctl rack reservations` lists them)."""


class Heatmap(Open):
    runs: list[str]
    figure: Optional[str]


class ServiceInstalled(Open):
    written: list[str]
    units: dict[str, str] = Field(default_factory=dict, description="--dry-run: file -> the unit's text")


# command words -> the model (or type) of `data`
OUTPUTS: dict[str, Any] = {
    "run": Union[RunDone, RunDry],
    "runs list": list[RunListed],
    "runs show": SummaryDocument,
    "runs export": RunsExport,
    "runs plot": RunsPlot,
    "scenarios": list[ScenarioListed],
    "scenarios show": ScenarioShown,
    "cc list": CcList,
    "config show": ConfigShown,
    "lab up": LabUp,
    "lab down": LabDown,
    "lab status": LabStatus,
    "inventory check": InventoryCheck,
    "inventory init": InventoryInit,
    "campaign plan": CampaignPlanned,
    "campaign submit": CampaignSubmitted,
    "campaign status": Union[list[CampaignStatus], CampaignStatus, None],
    "campaign pause": CampaignState,
    "campaign resume": CampaignState,
    "campaign cancel": CampaignState,
    "campaign report": Report,
    "campaign daemon": DaemonEnded,
    "campaign export": CampaignExported,
    "reproduce": Union[ReproduceReported, ReproduceQueued, ReproducePlan],    # ran here / queued / --dry-run
    "reproduce status": Optional[ReproduceStatus],     # null: no reproduction yet (exit 0)
    "reproduce report": ReproductionReport,
    "reproduce rerun": Union[ReproduceRerunReported, ReproduceRerun],   # with the report when it ran here
    "reproduce compare": ReproduceCompare,
    "rack status": RackStatus,
    "rack reserve": Reservation,
    "rack reservations": list[Reservation],
    "rack cancel": Reservation,
    **{c: RACK_OUTPUTS[c] for c in ("link set", "link reset", "link show", "link measure", "field start",
                                     "field status", "field stop", "field report")},
    "report rtt-loss": Heatmap,
    "metrics push": RACK_OUTPUTS["metrics push"],
    "service install": ServiceInstalled,
    "parse": ParseData,            # per KIND: controller/schemas/parse_outputs.py
}


def envelope_model(command: str) -> type[BaseModel]:
    """The envelope of `command`'s output, its `data` typed by OUTPUTS (`parse KIND` share one)."""
    data = OUTPUTS["parse" if command.startswith("parse ") else command]
    return create_model(
        "Envelope", __config__=ConfigDict(extra="forbid"),
        format=(Literal[1], Field(description="format of this envelope")),
        command=(str, Field(pattern=r"^parse [a-z0-9-]+$" if command == "parse" else f"^{command}$",
                            description="the command words")),
        ctl=(Ctl, ...), time=(Iso, Field(description="when the output was printed")), data=(data, ...))


def file_name(command: str) -> str:
    return command.replace(" ", "-") + ".schema.json"


def schema(command: str) -> dict:
    s = envelope_model(command).model_json_schema(mode="validation")
    if command == "parse":          # which of the kinds' data: the one `command` names
        s["allOf"] = parse_conditions()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"ctl-output-{file_name(command)}",
            "title": f"ctl {command} --json", **{k: v for k, v in s.items() if k != "title"}}
