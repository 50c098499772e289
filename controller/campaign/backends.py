"""Which campaign store a command uses: the configured back-end behind `CampaignStore`.

Today the one back-end is SQLite in the state dir; a second one registers here.
"""
from __future__ import annotations

from controller.campaign.sqlite_store import SQLiteStore, db_path
from controller.campaign.store import CampaignStore


def store_exists() -> bool:
    """Whether a store has been created yet (read-only commands need not create one)."""
    return db_path().exists()


def open_store() -> CampaignStore:
    """The configured store (today: SQLite in the state dir)."""
    return SQLiteStore()
