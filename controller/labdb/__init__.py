"""The lab database: one PostgreSQL database shared by every controller of a lab (optional).

Configured by `CTL_DATABASE_URL` (`postgresql://USER@HOST[:PORT]/DBNAME`, libpq's own
parameters such as `?sslmode=require` or `?host=/run/postgresql` allowed; parsed and checked
by `controller.labdb.url`). Without it ctl
keeps today's single-controller mode: the campaign store in SQLite in the state dir, rack
leases on the rack's first host. With it, the campaign queue (every rack's scheduler claims
runs from it), rack leases (session advisory locks), reservations and the uploaded run
summaries live there.

No secret is ever part of the URL (it would end up in process listings and logs): a password
or `?sslpassword=` is refused; libpq reads the password from `~/.pgpass` (or `$PGPASSFILE`) or a
service file, or use peer / certificate authentication. The URL is shown redacted anyway.
psycopg 3 is imported only when a database is used.

Who is who: with a database, a person is their PostgreSQL login (the session user), which the
database records itself on every reservation, lease and campaign row (`migrations`, step 4).
Without one, the only identity there is, is the local account ctl runs as (its uid's name,
never $USER or $LOGNAME, which anybody sets) on this machine: `whoami`.

`migrations` holds the versioned schema (a `schema_version` table, ordered steps, a newer
schema refused); `keys` the advisory-lock keys (classes that cannot collide, rack ids the
database allocates).
"""
from __future__ import annotations

import os
import pwd
import socket
from typing import Any

from controller.errors import CtlError, UsageError
from controller.labdb.url import parse_url

ENV = "CTL_DATABASE_URL"


class DatabaseError(CtlError):
    """The lab database cannot be reached or used (one line: what, where, why)."""


def database_url() -> str | None:
    """The configured lab database (`$CTL_DATABASE_URL`), checked; None: no database (SQLite mode)."""
    url = os.environ.get(ENV, "").strip()
    if not url:
        return None
    check_url(url)
    return url


def check_url(url: str, where: str = f"${ENV}") -> None:
    """Refuse what is not a PostgreSQL URL, a malformed one, or one that carries a secret (bad
    input: one line, exit 2; the secret is never printed)."""
    parse_url(url, where)


def redact(url: str) -> str:
    """The URL as shown to people: scheme, user, hosts, ports, database; no query, no password.
    Never fails (an unparseable URL is shown as such, without its text)."""
    try:
        return parse_url(url).redacted()
    except UsageError:
        scheme = url.partition("://")[0]
        return f"{scheme}://(a URL that does not parse)" if scheme in ("postgresql", "postgres") \
            else "(not a postgresql:// URL)"


def local_user() -> str:
    """The account this process runs as, by its uid (not $USER/$LOGNAME: those say what anybody sets)."""
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid{uid}"


def whoami() -> dict[str, Any]:
    """Who this controller process is on this machine (its account by uid, the machine, the pid),
    as recorded in leases, claims and reservations without a database; with one, the database
    replaces the user by the session user."""
    return {"user": local_user(), "host": socket.gethostname(), "pid": os.getpid()}


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
