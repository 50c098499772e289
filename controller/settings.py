"""Where ctl keeps its state, and the one resolution order for settings.

Settings resolve as: CLI flag > environment > config file > default.
"""
from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def state_dir() -> Path:
    """$CTL_STATE_DIR, else `.state/` in the project (git-ignored)."""
    d = Path(os.environ.get("CTL_STATE_DIR") or PROJECT_ROOT / ".state")
    return d


def export_state_dir() -> Path:
    """Make `${CTL_STATE_DIR}` usable in inventory paths (and in child processes)."""
    d = state_dir()
    os.environ["CTL_STATE_DIR"] = str(d)
    return d


def runs_dir(flag: str | None = None) -> Path:
    """--runs-dir > $CTL_RUNS_DIR > runs/ in the project."""
    if flag:
        return Path(flag)
    env = os.environ.get("CTL_RUNS_DIR")
    return Path(env) if env else PROJECT_ROOT / "runs"
