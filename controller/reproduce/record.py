"""A reproduction's record: which campaigns it queued, in which mode, on which rack, what could not
run and why. One JSON file per reproduction in the state dir, next to the campaign store:

    <state>/reproductions/<id>/reproduction.json     this record (written atomically: when queued, and
                                                     again when a cancelled campaign is queued again)
    <state>/reproductions/<id>/campaigns/*.yaml      the campaign files it submitted
    <state>/reproductions/<id>/report/               `ctl reproduce report` (HTML, Markdown, PNG, JSON)

The campaigns themselves live in the campaign store like any other (`ctl campaign status`).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.errors import UsageError
from controller.lock import FileLock
from controller.settings import state_dir

FORMAT = 1


class ReproductionError(UsageError):
    """An unknown or ambiguous reproduction id, or an unreadable record."""


@dataclass
class Reproduction:
    id: str
    mode: str
    papers: list[str]
    created: float
    inventory_path: str
    inventory_name: str
    rack_kind: str
    runs_root: str
    campaigns: list[dict[str, Any]] = field(default_factory=list)   # {key, paper, title, id, num, file, runs}
    not_runnable: list[dict[str, str]] = field(default_factory=list)
    algorithms: dict[str, dict] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    estimate: dict[str, float] = field(default_factory=dict)          # rack_s, traffic_s, finish

    def to_json(self) -> dict:
        return {"format": FORMAT, "id": self.id, "mode": self.mode, "papers": self.papers, "created": self.created,
                "inventory_path": self.inventory_path, "inventory_name": self.inventory_name,
                "rack_kind": self.rack_kind, "runs_root": self.runs_root, "campaigns": self.campaigns,
                "not_runnable": self.not_runnable, "algorithms": self.algorithms, "notes": self.notes,
                "estimate": self.estimate}

    @staticmethod
    def from_json(d: dict) -> "Reproduction":
        if d.get("format") != FORMAT:
            raise ReproductionError(f"reproduction {d.get('id')}: record format {d.get('format')} is not {FORMAT}")
        return Reproduction(d["id"], d["mode"], list(d["papers"]), float(d["created"]), d["inventory_path"],
                            d["inventory_name"], d["rack_kind"], d["runs_root"], list(d.get("campaigns") or []),
                            list(d.get("not_runnable") or []), dict(d.get("algorithms") or {}),
                            dict(d.get("notes") or {}), dict(d.get("estimate") or {}))

    @property
    def dir(self) -> Path:
        return root() / self.id


class RecordLock(FileLock):
    """One writer of a reproduction's record at a time (`ctl reproduce rerun`)."""

    def __init__(self, rid: str):
        super().__init__(f"reproduction-{rid}", f"ctl reproduce rerun {rid}")


def replace_campaign(r: Reproduction, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Put campaign `new` in the place of the cancelled campaign `old` (same key) in the record
    (pure, on the record in memory): the report reads the new one; the new entry keeps the ids of
    every campaign it replaced, oldest first, so the record still names the cancelled ones."""
    i = next(n for n, e in enumerate(r.campaigns) if e["id"] == old["id"])
    gone = {"id": old["id"], "num": old["num"], "submitted": old.get("submitted")}
    r.campaigns[i] = {**new, "replaces": [*(old.get("replaces") or []), gone]}


def root() -> Path:
    return state_dir() / "reproductions"


def new_id(mode: str, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    rid, n = f"{stamp}_reproduce-{mode}", 1
    while (root() / rid).exists():
        n += 1
        rid = f"{stamp}_reproduce-{mode}_{n}"
    return rid


def save(r: Reproduction) -> Path:
    """Write the record atomically (a reader sees the old or the new file, never half)."""
    r.dir.mkdir(parents=True, exist_ok=True)
    path = r.dir / "reproduction.json"
    tmp = path.with_name(f".reproduction.json.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        json.dump(r.to_json(), f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def load(rid: str) -> Reproduction:
    path = root() / rid / "reproduction.json"
    try:
        return Reproduction.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError) as exc:
        raise ReproductionError(f"reproduction {rid}: record not readable ({exc})") from None


def all_ids() -> list[str]:
    if not root().is_dir():
        return []
    return sorted(p.name for p in root().iterdir() if (p / "reproduction.json").is_file())


def find(ref: str | None) -> Reproduction:
    """By full id, a unique part of one, or (none given) the latest."""
    ids = all_ids()
    if not ids:
        raise ReproductionError("no reproductions yet (`ctl reproduce --quick` starts one)")
    if ref is None:
        return load(ids[-1])
    if ref in ids:
        return load(ref)
    part = [i for i in ids if ref in i]
    if len(part) == 1:
        return load(part[0])
    if part:
        raise ReproductionError(f"{ref!r} matches {len(part)} reproductions: {', '.join(part)}")
    raise ReproductionError(f"no reproduction {ref!r} (known: {', '.join(ids[-5:])})")
