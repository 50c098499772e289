"""The campaign file: a strict YAML model (pydantic), loaded with file and line in every error.

A campaign file names a scenario, fixed parameters, a sweep (cross product) or an explicit list
of cases, repetitions, an order, a pause between runs, an optional daily time window, a retry
policy per failure class, the health check and what the report shows.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator,
                      model_validator)

from controller.campaign.param_schema import add_scenarios
from controller.campaign.timing import Window, parse_window
from controller.errors import ParameterError, UsageError
from controller.inventory import format_validation_error
from controller.schema_patterns import DURATION, WINDOW, value_schema
from controller.yamlload import load_yaml_with_lines
from controller.units import parse_duration


class CampaignFileError(UsageError):
    """The campaign file is invalid (file, line and field in the message)."""


class CampaignError(UsageError):
    """A campaign command that cannot be done (unknown id, resuming a finished campaign...)."""


# ==== the campaign file ==========================================================================

FailureClass = Literal["host-unreachable", "command-failed", "traffic-error", "result-invalid", "refused"]
# Classes the policy decides; "restore-failed" and "error" (a controller bug) always pause:
# after either, the rack's state is not known to be the baseline, and data must not be produced.
POLICY_CLASSES: tuple[str, ...] = ("host-unreachable", "command-failed", "traffic-error", "result-invalid",
                                   "refused")
ALL_CLASSES: tuple[str, ...] = POLICY_CLASSES + ("restore-failed", "error", "interrupted")

_NAME = r"^[a-z0-9][a-z0-9._-]{0,60}$"
# A campaign is one rack's queue: the papers' largest design is 600 runs. Far more is a typo
# (a sweep list pasted twice, repetitions: 10000) and would take the machine's memory to expand.
MAX_RUNS = 100_000


def _param_value(v: Any) -> str:
    # Parameters go to the scenario's own parser as text, exactly as on the command line.
    # YAML booleans (yes/no/on/off) are never a parameter value: refuse them instead of guessing.
    if isinstance(v, bool) or v is None:
        raise ValueError(f"{v!r} is not a parameter value (write it as a string, e.g. \"20M\")")
    if isinstance(v, (int, float, str)):
        s = str(v)
        if not s.strip():
            raise ValueError("empty parameter value")
        return s
    raise ValueError(f"{v!r} is not a parameter value (a string or a number)")


ParamValue = Annotated[str, BeforeValidator(_param_value),
                       WithJsonSchema({"type": ["string", "number"], "description": "a parameter value, as on the "
                                       "command line (20M, 50ms, 0.01%)"})]


def _duration_text(what: str, allow_zero: bool = True) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        try:
            parse_duration(v, what=what, allow_zero=allow_zero)
        except ParameterError as exc:
            raise ValueError(str(exc).removeprefix(f"{what}: ")) from None
        return str(v)
    return check


# A duration in a campaign file: text (`10s`, `1min`; a bare number is seconds) or a YAML number.
_DURATION = value_schema(DURATION, {"minimum": 0})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RetryRule(_Strict):
    """attempts: how many attempts a run gets in all when it fails this way; wait: before the
    next attempt; then: what happens when they are used up (skip the run, or pause the campaign)."""

    attempts: int = Field(1, ge=1, le=20, description="attempts a run gets in all when it fails this way")
    wait: Annotated[str, BeforeValidator(_duration_text("wait"))] = Field(
        "0s", description="pause before the next attempt (a duration: 10s, 1min)", json_schema_extra=_DURATION)
    then: Literal["skip", "pause"] = Field("skip", description=(
        "when the attempts are used up: skip the run, or pause the campaign"))

    @property
    def wait_s(self) -> float:
        return parse_duration(self.wait, allow_zero=True)


class RetryPolicy(_Strict):
    """What happens to a run that fails, per failure class."""

    host_unreachable: RetryRule = Field(RetryRule(attempts=3, wait="60s", then="pause"), alias="host-unreachable",
                                        description="a host could not be reached over SSH")
    command_failed: RetryRule = Field(RetryRule(attempts=2, wait="10s", then="skip"), alias="command-failed",
                                      description="a command on a host failed")
    traffic_error: RetryRule = Field(RetryRule(attempts=3, wait="10s", then="skip"), alias="traffic-error",
                                     description="the traffic (iperf3, BitTorrent) failed")
    result_invalid: RetryRule = Field(RetryRule(attempts=2, wait="0s", then="skip"), alias="result-invalid",
                                      description="the run completed but its result is invalid (e.g. no MPTCP)")
    refused: RetryRule = Field(RetryRule(attempts=1, wait="0s", then="pause"), alias="refused",
                               description="the rack refused the run before any change (e.g. a missing algorithm)")

    def rule(self, klass: str) -> RetryRule:
        return getattr(self, klass.replace("-", "_"))


class HealthSpec(_Strict):
    """The check before every run. A failure pauses the campaign with the reason."""

    max_clock_spread: Annotated[str, BeforeValidator(_duration_text("max_clock_spread", False))] = Field(
        "10ms", description="largest clock offset between hosts a run may start with (a duration)",
        json_schema_extra=_DURATION)
    clock_samples: int = Field(5, ge=1, le=50, description="exchanges per host to measure its clock offset")
    shapers_at_baseline: bool = Field(True, description="every bridge must be at its inventory baseline")

    @property
    def max_clock_spread_s(self) -> float:
        return parse_duration(self.max_clock_spread)


class HeatmapSpec(_Strict):
    """A heatmap of the report: the metric over two swept parameters."""

    x: str = Field(description="the swept parameter on the x axis")
    y: str = Field(description="the swept parameter on the y axis")
    panels: str | None = Field(None, description="a swept parameter with one panel per value")


class ReportSpec(_Strict):
    """What `ctl campaign report` shows."""

    metric: str | None = Field(None, description=(
        "the summary metric the figures show (default: the scenario's headline)"))
    heatmap: HeatmapSpec | None = Field(None, description="a heatmap over two swept parameters")


class CampaignSpec(_Strict):
    """A campaign: one scenario's runs over a sweep of its parameters, repeated (ctl campaign plan FILE)."""

    # the schema names the scenarios and, per scenario, the parameters `fixed`/`sweep`/`cases` take
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=add_scenarios)

    version: Literal[1] = Field(description="format version of this file: 1")
    name: str | None = Field(None, pattern=_NAME, description="the campaign's name (default: the file's name)")
    description: str = Field("", description="what the campaign is for, for people")
    scenario: str = Field(description="the scenario every run runs (`ctl scenarios` lists them)")
    fixed: dict[str, ParamValue] = Field(default_factory=dict, description=(
        "parameters every run gets, as on the command line (`--link2 20M` is `link2: 20M`)"))
    sweep: dict[str, list[ParamValue]] | None = Field(None, description=(
        "parameters and their values: every combination is a case (cross product)"))
    cases: list[dict[str, ParamValue]] | None = Field(None, description="or: the cases, one mapping of parameters each")
    repetitions: int = Field(1, ge=1, le=1000, description="runs of every case")
    order: Literal["random", "sequential"] = Field("random", description=(
        "random (shuffled with a recorded seed) or sequential"))
    seed: int | None = Field(None, ge=0, lt=2**63, description="the shuffle's seed (default: drawn and recorded)")
    pause: Annotated[str, BeforeValidator(_duration_text("pause"))] = Field(
        "0s", description="pause between runs (a duration)", json_schema_extra=_DURATION)
    window: str | None = Field(None, description=(
        "daily time window runs may start in, local time HH:MM-HH:MM (22:00-07:00)"),
        json_schema_extra={"pattern": WINDOW})
    overhead: Annotated[str, BeforeValidator(_duration_text("overhead"))] = Field(
        "20s", description="set-up and restore time per run, for the finish-time estimate",
        json_schema_extra=_DURATION)
    racks: list[str] | None = Field(None, description=(
        "several racks share the runs: their inventory files (relative to this file); each rack's "
        "scheduler claims the next run for its rack, every run is done once"))
    rack_group: str | None = Field(None, pattern=_NAME, description=(
        "or: every rack whose inventory names this `group` shares the runs"))
    retry: RetryPolicy = Field(default_factory=lambda: RetryPolicy.model_validate({}), description=(
        "what happens to a run that fails, per failure class"))
    health: HealthSpec = Field(default_factory=lambda: HealthSpec.model_validate({}), description=(
        "the check before every run"))
    report: ReportSpec = Field(default_factory=ReportSpec, description="what the report shows")

    @field_validator("window")
    @classmethod
    def _window(cls, v: str | None) -> str | None:
        if v is not None:
            parse_window(v)  # raises ValueError with the reason
        return v

    @field_validator("sweep")
    @classmethod
    def _sweep(cls, v: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
        for k, values in (v or {}).items():
            if not values:
                raise ValueError(f"{k}: an empty list of values")
            if len(set(values)) != len(values):
                raise ValueError(f"{k}: a value is listed twice")
        return v

    @field_validator("racks")
    @classmethod
    def _racks(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("an empty list of racks (leave `racks` out to run on the --inventory rack)")
        if len(set(v)) != len(v):
            raise ValueError("a rack is listed twice")
        for p in v:
            if not isinstance(p, str) or not p.strip() or any(ord(c) < 32 for c in p):
                raise ValueError(f"{p!r} is not an inventory file path")
        return v

    @model_validator(mode="after")
    def _shape(self) -> "CampaignSpec":
        if self.racks is not None and self.rack_group is not None:
            raise ValueError("give either `racks` (inventory files) or `rack_group`, not both")
        if self.sweep is not None and self.cases is not None:
            raise ValueError("give either `sweep` (cross product) or `cases` (explicit list), not both")
        if self.cases is not None and not self.cases:
            raise ValueError("cases: an empty list")
        n = self.run_count()
        if n > MAX_RUNS:
            raise ValueError(f"{n} runs ({self.case_count()} cases x {self.repetitions} repetitions): at most "
                             f"{MAX_RUNS} runs per campaign; split it into several campaigns")
        fixed = {_norm(k) for k in self.fixed}
        for k in (self.sweep or {}):
            if _norm(k) in fixed:
                raise ValueError(f"parameter {k!r} is both fixed and swept")
        for i, c in enumerate(self.cases or []):
            for k in c:
                if _norm(k) in fixed:
                    raise ValueError(f"cases[{i}]: parameter {k!r} is also fixed")
        return self

    def case_count(self) -> int:
        """Cases without expanding them (a sweep is the product of its lists' lengths)."""
        if self.cases is not None:
            return len(self.cases)
        return math.prod(len(v) for v in (self.sweep or {}).values())

    def run_count(self) -> int:
        return self.case_count() * self.repetitions

    @property
    def pause_s(self) -> float:
        return parse_duration(self.pause, allow_zero=True)

    @property
    def overhead_s(self) -> float:
        return parse_duration(self.overhead, allow_zero=True)

    def window_obj(self) -> "Window | None":
        return parse_window(self.window) if self.window else None


def _norm(name: str) -> str:
    """`tcp-cc`, `tcp_cc` and `--tcp-cc` name the same parameter."""
    return name.lstrip("-").replace("-", "_")


def load_campaign(path: Path) -> tuple[CampaignSpec, dict[tuple, int], str]:
    """Parse and validate the file's structure. Returns (spec, line of every key, file text)."""
    try:
        data, lines = load_yaml_with_lines(path)
    except UsageError as exc:  # the inventory loader's YAML errors already name file and line
        raise CampaignFileError(str(exc)) from None
    if not isinstance(data, dict):
        raise CampaignFileError(f"{path}:1: a campaign file is a mapping")
    try:
        spec = CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise CampaignFileError(format_validation_error(path, exc, lines)) from None
    if spec.name is None:
        # the name _NAME allows: it starts with a letter or digit (a stem `.x` or `_x` does not)
        stem = re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).lstrip("._-")[:60].rstrip("-") or "campaign"
        spec = spec.model_copy(update={"name": stem})
    return spec, lines, path.read_text()
