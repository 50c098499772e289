"""A real PostgreSQL server for the tests: Debian's `postgresql` package, started by the test
itself (no system service): `initdb` + `pg_ctl` as the `postgres` account, in a private
directory under /tmp, listening on a Unix socket only (no TCP port, so nothing else on the
machine can reach it and nothing it does collides with another test session).

Each test gets its own database (`fresh_database`), owned by the role `ctl`, so tests never
see each other's rows.
"""
from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

PG_ROOT = Path("/usr/lib/postgresql")


def pg_bindir() -> Path:
    """The newest installed server's bin directory (Debian: /usr/lib/postgresql/<major>/bin)."""
    versions = sorted((p for p in PG_ROOT.glob("*/bin/initdb")), key=lambda p: int(p.parent.parent.name))
    if not versions:
        raise RuntimeError("PostgreSQL server missing: apt-get install postgresql (scripts/setup.sh does)")
    return versions[-1].parent


class PostgresServer:
    """initdb + pg_ctl start on a private socket directory; `stop()` ends it and removes its files."""

    def __init__(self) -> None:
        if os.geteuid() != 0:
            raise RuntimeError("the PostgreSQL test server is started as the postgres account: run the tests as root")
        self.bindir = pg_bindir()
        pw = pwd.getpwnam("postgres")
        # mkdtemp: created with O_EXCL and mode 0700, then given to postgres (never a pre-existing path).
        self.dir = Path(tempfile.mkdtemp(prefix="ctl-pg-", dir="/tmp"))
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.data = self.dir / "data"
        self.sock = self.dir / "sock"
        self.port = 5432  # names the socket file only: listen_addresses is empty
        self.log = self.dir / "server.log"
        self._names = itertools.count(1)
        self.started = False

    def _as_postgres(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(["runuser", "-u", "postgres", "--", *argv], capture_output=True, text=True,
                              timeout=timeout, cwd=self.dir)

    def start(self) -> "PostgresServer":
        self._as_postgres("mkdir", "-m", "0700", str(self.sock))
        p = self._as_postgres(str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                              "-E", "UTF8", "--locale=C", "--no-instructions")
        if p.returncode != 0:
            raise RuntimeError(f"initdb failed: {p.stderr[-2000:]}")
        p = self._as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                              "-o", f"-c listen_addresses= -c unix_socket_directories={self.sock} -p {self.port} "
                                    "-c max_connections=200", "start")
        if p.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {p.stderr[-2000:]} {self.log.read_text()[-2000:]}")
        self.started = True
        self.admin("CREATE ROLE ctl LOGIN")
        return self

    def url(self, database: str = "ctl", user: str = "ctl") -> str:
        return f"postgresql://{user}@/{database}?host={self.sock}&port={self.port}"

    def admin(self, sql: str, database: str = "postgres") -> None:
        import psycopg
        with psycopg.connect(self.url(database, "postgres"), autocommit=True) as c:
            c.execute(sql)

    def fresh_database(self) -> str:
        """A new empty database owned by `ctl`; returns its URL."""
        name = f"ctl_{os.getpid()}_{next(self._names)}"
        self.admin(f"CREATE DATABASE {name} OWNER ctl")
        return self.url(name)

    def stop(self) -> None:
        if self.started:
            self._as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)
