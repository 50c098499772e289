"""Which campaign store a command uses: the configured back-end behind `CampaignStore`.

`$CTL_DATABASE_URL` set: the lab database on PostgreSQL (shared by every controller of the
lab); otherwise SQLite in the state dir (one controller, the default).
"""
from __future__ import annotations

from controller.campaign.pg_store import PostgresStore
from controller.campaign.sqlite_store import SQLiteStore, db_path
from controller.campaign.store import CampaignStore
from controller.labdb import database_url, redact


def store_exists() -> bool:
    """Whether a store has been created yet (read-only commands need not create one)."""
    return database_url() is not None or db_path().exists()


def open_store(purpose: str = "campaign") -> CampaignStore:
    """The configured store: PostgreSQL with `$CTL_DATABASE_URL`, else SQLite in the state dir."""
    url = database_url()
    if url is not None:
        return PostgresStore(url, purpose)
    return SQLiteStore()


def store_location() -> str:
    """Where the configured store lives, for people (a redacted URL or the file)."""
    url = database_url()
    return redact(url) if url is not None else str(db_path())
