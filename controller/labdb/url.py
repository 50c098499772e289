"""The lab database URL, parsed (pure): `postgresql://[USER@][HOST][:PORT][,HOST[:PORT]...]/DBNAME[?K=V&...]`,
as libpq reads a connection URI (PostgreSQL docs, 34.1.1.2 "Connection URIs"): a host is a name,
an IPv4 address, an IPv6 address in brackets, or a %-encoded socket directory (`%2Frun%2Fpostgresql`);
several hosts are separated by commas; query parameters are libpq keywords.

Every problem is one line (UsageError: exit 2, nothing done) naming the part that is wrong. A URL
that carries a secret -- a password in the user part, or a parameter whose value is one
(`password`, `sslpassword`, `oauth_client_secret`) -- is refused before anything else is looked
at, and the message never contains it: secrets come from ~/.pgpass or $PGPASSFILE (libpq's
password file), a libpq service file (`?service=`), or peer / certificate authentication.
Linear time: one pass over the URL, each part split once.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import unquote

from controller.errors import UsageError

SCHEMES = ("postgresql", "postgres")
# libpq keywords whose value is a secret (paths such as sslkey or passfile are references).
SECRET_PARAMS = frozenset({"password", "sslpassword", "oauth_client_secret"})
_HOSTNAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})")
_PORT = re.compile(r"[0-9]{1,5}")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
NO_SECRET = ("a password in the URL is not allowed (it would show in process lists, logs and `ctl config show`): "
             "put it in ~/.pgpass (or the file $PGPASSFILE names) or a libpq service file, or use peer or certificate "
             "authentication")


@dataclass(frozen=True)
class DatabaseUrl:
    scheme: str
    user: str | None
    hosts: tuple[tuple[str, int | None], ...]    # ("", None): libpq's default (or ?host=)
    dbname: str
    params: tuple[tuple[str, str], ...]

    def param(self, key: str) -> str | None:
        return next((v for k, v in self.params if k == key), None)

    def redacted(self) -> str:
        """Scheme, user, hosts and ports, database: never the query (it may name key files)."""
        hosts = []
        for host, port in self.hosts:
            if not host and self.param("host"):
                host = self.param("host") or ""
            if port is None and self.param("port"):
                port_text = f":{self.param('port')}"
            else:
                port_text = f":{port}" if port is not None else ""
            hosts.append((f"[{host}]" if ":" in host and not host.startswith("/") else host) + port_text)
        user = f"{self.user}@" if self.user else ""
        return f"{self.scheme}://{user}{','.join(hosts)}/{self.dbname}"


def _decode(text: str, what: str, where: str) -> str:
    if _BAD_ESCAPE.search(text):
        raise UsageError(f"{where}: a bad %-escape in the {what} (write % as %25)")
    out = unquote(text, errors="strict") if "%" in text else text
    if any(ord(c) < 32 or ord(c) == 127 for c in out):
        raise UsageError(f"{where}: a control character in the {what}")
    return out


def _port(text: str, where: str) -> int:
    if not _PORT.fullmatch(text) or not 1 <= int(text) <= 65535:
        raise UsageError(f"{where}: port {text[:20]!r} is not a number from 1 to 65535")
    return int(text)


def _host(text: str, where: str) -> tuple[str, int | None]:
    """One `host[:port]` of the host list."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise UsageError(f"{where}: an IPv6 address in brackets needs its closing ']'")
        literal = _decode(text[1:end], "IPv6 address", where)
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            raise UsageError(f"{where}: {literal[:60]!r} is not an IPv6 address") from None
        rest = text[end + 1:]
        if rest and not rest.startswith(":"):
            raise UsageError(f"{where}: after an IPv6 address in brackets comes ':PORT' or nothing")
        return literal, _port(rest[1:], where) if rest else None
    host, colon, port = text.partition(":")
    if colon and ":" in port:
        raise UsageError(f"{where}: an IPv6 address must be written in brackets ([2001:db8::1]:5432)")
    host = _decode(host, "host", where)
    if host and not host.startswith("/") and not _HOSTNAME.fullmatch(host):
        raise UsageError(f"{where}: {host[:60]!r} is not a host name, an IP address or a socket directory")
    return host, _port(port, where) if colon else None


def parse_url(url: str, where: str = "$CTL_DATABASE_URL") -> DatabaseUrl:
    """The URL's parts, checked (see the module docstring); UsageError in one line otherwise."""
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise UsageError(f"{where}: a control character in the URL")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in SCHEMES:
        raise UsageError(f"{where}: not a postgresql:// URL (postgresql://USER@HOST[:PORT]/DBNAME)")
    # Secrets first, before any other message could quote a part that holds one.
    authority, _slash, _ = rest.partition("/")
    authority = authority.partition("?")[0]
    userinfo, at, _hostlist = authority.rpartition("@")
    if at and ":" in userinfo:
        raise UsageError(f"{where}: the URL holds a password: {NO_SECRET}")
    head, qmark, query = rest.partition("?")
    for item in query.split("&") if qmark else ():
        key = item.partition("=")[0]
        try:
            name = unquote(key, errors="strict").strip().lower()
        except UnicodeDecodeError:
            name = key.lower()
        if name in SECRET_PARAMS:
            raise UsageError(f"{where}: the URL holds a password (?{name}=...): {NO_SECRET}")
    if "#" in url:
        raise UsageError(f"{where}: a '#' in the URL (write it as %23)")
    authority, slash, path = head.partition("/")
    userinfo, at, hostlist = authority.rpartition("@")
    user = _decode(userinfo, "user name", where) if at else None
    if at and not user:
        raise UsageError(f"{where}: an empty user name before '@'")
    hosts = tuple(_host(h, where) for h in hostlist.split(",")) if hostlist else (("", None),)
    dbname = _decode(path, "database name", where) if slash else ""
    if not dbname:
        raise UsageError(f"{where}: the URL names no database (postgresql://USER@HOST/DBNAME)")
    params = []
    for item in query.split("&") if qmark and query else ():
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"{where}: {_decode(key, 'query', where)[:40]!r} in the query is not KEY=VALUE")
        key, value = _decode(key, "query", where), _decode(value, "query", where)
        if key == "port":
            for p in value.split(","):
                _port(p, where)
        params.append((key, value))
    return DatabaseUrl(scheme, user, hosts, dbname, tuple(params))
