"""The campaign store on PostgreSQL (the lab database, `$CTL_DATABASE_URL`): one queue for
every rack's scheduler on every controller machine.

The same statements as SQLite (`controller.campaign.sqlstore`), parameterised (psycopg's
server-side binding; the `?` of the shared text become `%s`, never data), each state change
one transaction. Rows a transaction reads before it changes them are locked (`FOR UPDATE`);
a claim skips rows another scheduler is claiming (`FOR UPDATE SKIP LOCKED`), so two
schedulers never take the same run and never wait for each other. The schema is the lab
database's, migrated on open (`controller.labdb.migrations`); a newer one is refused.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from controller.campaign.sqlstore import SQLStore
from controller.labdb import DatabaseError, connect, first_line, redact
from controller.labdb.migrations import migrate


class PostgresStore(SQLStore):
    shared = True     # every controller of the lab reads it: closed attempts' records are uploaded
    FOR_UPDATE = " FOR UPDATE"
    SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str, purpose: str = "campaign store"):
        self.url = url
        self.where = redact(url)
        self.conn = connect(url, purpose)
        try:
            migrate(self.conn)
        except BaseException:
            self.conn.close()
            raise

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        import psycopg
        try:
            with self.conn.transaction():
                yield self.conn
        except psycopg.OperationalError as exc:
            # The database went away mid-transaction: nothing of it was committed.
            raise DatabaseError(f"lab database {self.where}: {first_line(exc)}") from None

    @staticmethod
    def _sql(sql: str) -> str:
        # The shared statements are constants with `?` placeholders and no `%`: the mapping is
        # textual on our own SQL only; values always travel as bound parameters.
        assert "%" not in sql, sql
        return sql.replace("?", "%s")

    def _x(self, sql: str, args: Sequence[Any] = ()) -> Any:
        import psycopg
        try:
            return self.conn.execute(self._sql(sql), tuple(args))
        except psycopg.OperationalError as exc:
            raise DatabaseError(f"lab database {self.where}: {first_line(exc)}") from None

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(self._sql(sql), [tuple(r) for r in rows])
