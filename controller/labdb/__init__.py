"""The lab database: one PostgreSQL database shared by every controller of a lab (optional).

Configured by `CTL_DATABASE_URL` (`postgresql://USER@HOST[:PORT]/DBNAME`, libpq's own
parameters such as `?sslmode=require` or `?host=/run/postgresql` allowed). Without it ctl
keeps today's single-controller mode: the campaign store in SQLite in the state dir, rack
leases on the rack's first host. With it, the campaign queue (every rack's scheduler claims
runs from it), rack leases (session advisory locks), reservations and the uploaded run
summaries live there.

The password is never part of the URL (it would end up in process listings and logs): libpq
reads it from `~/.pgpass` (or `$PGPASSFILE`), or use peer / certificate authentication. The
URL is shown redacted anyway. psycopg 3 is imported only when a database is used.

`migrations` holds the versioned schema (a `schema_version` table, ordered steps, a newer
schema refused).
"""
from __future__ import annotations

import getpass
import os
import socket
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from controller.errors import CtlError, UsageError

ENV = "CTL_DATABASE_URL"
_SCHEMES = ("postgresql", "postgres")


class DatabaseError(CtlError):
    """The lab database cannot be reached or used (one line: what, where, why)."""


def database_url() -> str | None:
    """The configured lab database (`$CTL_DATABASE_URL`), checked; None: no database (SQLite mode)."""
    url = os.environ.get(ENV, "").strip()
    if not url:
        return None
    check_url(url)
    return url


def check_url(url: str) -> None:
    """Refuse what is not a PostgreSQL URL, or one that carries a password (bad input: exit 2)."""
    if any(ord(c) < 32 for c in url):
        raise UsageError(f"${ENV}: a control character in the URL")
    u = urlsplit(url)
    if u.scheme not in _SCHEMES:
        raise UsageError(f"${ENV}: {redact(url)!r} is not a postgresql:// URL")
    if u.password is not None or any(k == "password" for k, _ in parse_qsl(u.query)):
        raise UsageError(f"${ENV}: a password in the URL is not allowed (it would show in process lists and "
                         "logs): put it in ~/.pgpass (or $PGPASSFILE), or use peer/certificate authentication")
    if not u.path.strip("/"):
        raise UsageError(f"${ENV}: {redact(url)!r} names no database (postgresql://USER@HOST/DBNAME)")


def redact(url: str) -> str:
    """The URL as shown to people: scheme, user, host, port, database; no query, no password."""
    u = urlsplit(url)
    host = u.hostname or ""
    q = dict(parse_qsl(u.query))
    if not host and "host" in q:
        host = q["host"]
    port = f":{u.port}" if u.port else (f":{q['port']}" if "port" in q else "")
    user = f"{u.username}@" if u.username else ""
    return f"{u.scheme}://{user}{host}{port}{u.path}"


def whoami() -> dict[str, Any]:
    """Who this controller process is, as recorded in leases, claims and reservations."""
    return {"user": getpass.getuser(), "host": socket.gethostname(), "pid": os.getpid()}


def connect(url: str, purpose: str, *, autocommit: bool = True) -> Any:
    """A psycopg connection with dict rows. Each state change is then one explicit
    `with conn.transaction():` block; reads outside one see committed data only.

    TCP keepalives are on, so a lost network ends the session (and the advisory locks it
    holds) within about a minute instead of the kernel's two hours."""
    import psycopg  # slow optional library: only when a database is configured
    from psycopg.rows import dict_row
    try:
        return psycopg.connect(url, autocommit=autocommit, row_factory=dict_row, connect_timeout=10,
                               application_name=f"ctl {purpose}"[:63], keepalives=1, keepalives_idle=15,
                               keepalives_interval=5, keepalives_count=3)
    except psycopg.Error as exc:
        raise DatabaseError(f"lab database {redact(url)}: cannot connect: {first_line(exc)}") from None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[0].split()) if text else type(exc).__name__
