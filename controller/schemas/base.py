"""What every `--json` output model shares: the open base model (a later version may add keys, never
drop or retype one) and the ISO 8601 time type (the envelope turns Unix seconds into it by key name,
controller/results/wire.py)."""
from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

ISO_PATTERN = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$"
Iso = Annotated[str, Field(pattern=ISO_PATTERN, description="ISO 8601 time with its zone (ctl writes UTC, Z)")]


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
