"""Advisory-lock keys in the lab database, chosen so that no two can collide.

PostgreSQL's two-key advisory locks (`pg_advisory_lock(int4, int4)`, shown in `pg_locks` as
classid, objid with objsubid 2) are one namespace per database. ctl uses three classes, each
a constant of its own, and within a class a key that is unique by construction:

- `MIGRATION_KEY` = (MIGRATION_CLASS, 0): schema migrations, one at a time;
- (LEASE_CLASS, rack id): a rack's lease, held for the life of the holder's session;
- (BOOK_CLASS, rack id): a rack's reservation book while one booking is checked and written.

A rack id is not derived from the name (a hash: names with one CRC were found in well under a
millisecond and made each other busy, and a rack whose CRC was 1 blocked every migration). It is
allocated by the database: the `racks` table (migration 4) gives each rack name a serial id on
first use, and a trigger refuses every UPDATE, DELETE and TRUNCATE of it, so a name keeps its
id for the life of the database and two names never share one. The classes differ from each
other and from the keys older ctl versions used ((0x6374, crc32) and (0x6374, 1)); those ctl
versions refuse the migrated schema (it is newer than theirs).
"""
from __future__ import annotations

from typing import Any

MIGRATION_CLASS = 0x63746D00     # "ctm"
LEASE_CLASS = 0x63746C00         # "ctl"
BOOK_CLASS = 0x63746200          # "ctb"
MIGRATION_KEY = (MIGRATION_CLASS, 0)
LEGACY_CLASS = 0x6374            # before schema 4: (0x6374, crc32(name) & 0x7FFFFFFF) per rack lease


def rack_id(conn: Any, rack: str) -> int:
    """The database's id of rack `rack`, allocated on first use (needs schema 4). Two controllers
    asking at once get the same id: the name is UNIQUE and the insert does nothing on conflict."""
    row = conn.execute("SELECT id FROM racks WHERE name = %s", (rack,)).fetchone()
    if row is None:      # (an insert that conflicts still draws a number: only when it is missing)
        conn.execute("INSERT INTO racks (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (rack,))
        row = conn.execute("SELECT id FROM racks WHERE name = %s", (rack,)).fetchone()
    return int(row["id"])


def lease_key(rack_id_: int) -> tuple[int, int]:
    return LEASE_CLASS, rack_id_


def book_key(rack_id_: int) -> tuple[int, int]:
    return BOOK_CLASS, rack_id_
