"""ctl's own reader of the OpenSSH client configuration format (ssh_config(5)). It executes nothing.

An inventory may name an OpenSSH client config (`ssh.config_file`). ctl takes five things from it:
HostName, User, Port, IdentityFile and ProxyJump, and reads what decides which blocks apply to a
host: Host, Match (criteria host, originalhost, user, localuser, tagged, all, canonical, final),
Include and Tag (plus HostKeyAlias, for the %k token only). Every other directive is ignored,
except those that make OpenSSH run a program, which are refused wherever they stand -- in a
block that does not match the host, in an included file, in an Include read from such a block:
`Match exec`, ProxyCommand and KnownHostsCommand (other than `none`), LocalCommand and
`PermitLocalCommand yes`. A refusal is one line naming the file, the line and the directive.

The format as OpenSSH reads it (readconf.c, misc.c), and as ctl reads it:
- a line is a keyword, case-insensitive, separated from its arguments by whitespace or one `=`;
  arguments split at blanks, `"` and `'` quote, a backslash escapes a quote, a backslash or a
  blank; a `#` where an argument would start ends the line; lines end at `\\n` only.
- the first value obtained wins, except IdentityFile, which accumulates (duplicates once).
- `Host` patterns (`*`, `?`, `!`) match the host as given; `Match host` matches the host after
  HostName, `originalhost` the host as given, `user` the remote user as obtained so far
  (`localuser`: the account running ctl); criteria take comma-separated pattern lists.
- `Include`: glob patterns, relative ones in ~/.ssh, read in lexical order, at most 16 deep.
  Files included from a block that does not apply are read (and checked) but apply nothing.
  A file that appears twice in one chain of Includes is an error naming it.
- a non-negated `Match final` anywhere makes a second pass, in which `Host` matches the host after
  HostName and `canonical` and `final` hold. ctl never canonicalizes a host name: a
  CanonicalizeHostname yes/always in force for a host is refused (OpenSSH would look names up).

Tokens and environment: each directive expands what ssh_config(5) defines for it and nothing
else: HostName %h and %%; IdentityFile %%, %C, %d, %h, %i, %j, %k, %L, %l, %n, %p, %r, %u and
`~`; User the same but %r and %C; Include only the tokens that do not depend on the host
(%%, %d, %i, %L, %l, %u: ctl reads every included file before it knows a host). `${VAR}`
(IdentityFile, User, Include, the directives OpenSSH expands it in) is expanded only for HOME,
USER and LOGNAME, and never for a variable the caller names as a secret reference; any other
variable is refused with an error that names the directive and the variable, never a value.
`${` in a directive OpenSSH does not expand it in (HostName, Port, ProxyJump, Tag) is refused the
same way, so no variable's name can end up in a DNS query either.

Bounds: a file at most 256 KiB, 256 files and 4 MiB in all; a HostName, Tag or User at most 255
characters. Tokenizing is one pass over each line; a pattern is matched by splitting it at `*`
and finding each piece leftmost (pieces are literal text and `?`: no quantifier is ever compiled),
so matching is linear in the pattern times a host name's bounded length.

    cfg = load(Path("~/.ssh/config").expanduser())
    cfg.resolve("dn1", default_user="root", default_port=22)
    Resolved(host='192.168.50.31', user='ops', port=2201, ...)
"""
from __future__ import annotations

import functools
import glob
import hashlib
import ipaddress
import os
import pwd
import re
import socket
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping

from controller.argutil import NAME_PATTERNS
from controller.errors import ParameterError
from controller.textsafe import shown

MAX_DEPTH = 16                 # READCONF_MAX_DEPTH in OpenSSH's readconf.c
MAX_FILE_BYTES = 256 << 10
MAX_TOTAL_BYTES = 4 << 20
MAX_FILES = 256                # files read for one config (a file included twice counts twice)
MAX_IDENTITY_FILES = 100       # SSH_MAX_IDENTITY_FILES
MAX_NAME = 255                 # HostName, Tag, User: a DNS name is at most 253
SAFE_ENV = ("HOME", "USER", "LOGNAME")
MAX_HOPS = 4

_WS = " \t\r\n"
_NAMES = {n.lower(): n for n in ("Host", "Match", "Include", "HostName", "User", "Port", "IdentityFile",
                                 "ProxyJump", "Tag", "HostKeyAlias", "CanonicalizeHostname")}
# What would make OpenSSH run a program, with the values that run nothing.
_REFUSED = {
    "proxycommand": ("ProxyCommand", {"none"}, "a command line OpenSSH runs to reach the host; use ProxyJump, "
                                               "or `proxy_jump` in the inventory"),
    "knownhostscommand": ("KnownHostsCommand", {"none"}, "a command OpenSSH runs to list host keys; ctl checks "
                                                         "them against the inventory's known_hosts"),
    "localcommand": ("LocalCommand", set(), "a command OpenSSH runs on this machine after connecting"),
    "permitlocalcommand": ("PermitLocalCommand", {"no", "false"}, "it lets LocalCommand and `!command` run "
                                                                  "commands on this machine"),
}
_NEVER_RUN = "ctl never runs a command named in an OpenSSH config"
_PATH_TOKENS = "CdhijkLlnpru"                     # ssh_config(5) TOKENS: IdentityFile, Include, ...
_TOKENS = {"HostName": "h", "IdentityFile": _PATH_TOKENS, "User": "dhijkLlnpu", "Include": "diLlu"}
_ENV = ("IdentityFile", "User", "Include")         # the honoured directives OpenSSH expands ${VAR} in
_CRITERIA = ("host", "originalhost", "user", "localuser", "tagged")
_UNSUPPORTED = {"localnetwork": "the addresses of this machine's interfaces",
                "version": "the OpenSSH version (ctl is not OpenSSH)",
                "command": "the command line given to ssh", "sessiontype": "the kind of session ssh opens"}
_EQ_FORM = {"host", "originalhost", "user", "localuser", "localnetwork", "version", "tagged", "command", "exec"}
_HOSTNAME = re.compile(r"[A-Za-z0-9._:-]+")


class _Bad(Exception):
    """A problem with one line; becomes a ParameterError naming the file and the line."""


# ---- ProxyJump syntax (also the inventory's proxy_jump) ---------------------------------------

# A bastion as OpenSSH's ProxyJump writes it: [user@]host[:port], several separated by commas.
_HOP = re.compile(r"(?:(?P<user>" + NAME_PATTERNS["user"] + r")@)?"
                  r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*))"
                  r"(?::(?P<port>[0-9]{1,5}))?")


@dataclass(frozen=True)
class JumpSpec:
    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return (f"{self.user}@" if self.user else "") + host + (f":{self.port}" if self.port else "")


def parse_proxy_jump(text: str, what: str = "proxy_jump") -> list[JumpSpec]:
    """OpenSSH ProxyJump syntax, `[user@]host[:port][,...]`; "none" is no bastion."""
    text = text.strip()
    if text.lower() == "none":
        return []
    hops = []
    for part in text.split(","):
        m = _HOP.fullmatch(part.strip())
        if not m:
            raise ParameterError(f"{what}: {shown(part.strip(), 60)!r} is not [user@]host[:port] (ssh:// URLs "
                                 "and ProxyCommand are not supported)")
        port = int(m.group("port")) if m.group("port") else None
        if port is not None and not 1 <= port <= 65535:
            raise ParameterError(f"{what}: port {port} is outside 1..65535")
        hops.append(JumpSpec(m.group("v6") or m.group("host"), m.group("user"), port))
    if len(hops) > MAX_HOPS:
        raise ParameterError(f"{what}: {len(hops)} bastions in a chain; at most {MAX_HOPS}")
    return hops


# ---- one line --------------------------------------------------------------------------------

def _strdelim(s: str) -> tuple[str, str | None] | None:
    """misc.c strdelim(): the next word of `s` (ended by whitespace, a quote or one `=`) and the
    rest (None: nothing followed); None for an unmatched quote."""
    i = next((k for k, c in enumerate(s) if c in _WS or c in '"='), -1)
    if i < 0:
        return s, None
    if s[i] == '"':
        t = s[:i] + s[i + 1:]
        j = t.find('"', i)
        if j < 0:
            return None
        return t[:j], t[j + 1:].lstrip(_WS)
    rest = s[i + 1:].lstrip(_WS)
    if s[i] != "=" and rest.startswith("="):
        rest = rest[1:].lstrip(_WS)
    return s[:i], rest


def split_line(line: str) -> tuple[str, str] | None:
    """readconf.c: the keyword (as written) and the rest of a line; None for a blank line or a comment."""
    line = line.split("\0", 1)[0].rstrip(_WS + "\f")
    first = _strdelim(line)
    if first is None:
        return None
    keyword, rest = first
    if keyword == "" and rest is not None:
        again = _strdelim(rest)
        if again is None:
            return None
        keyword, rest = again
    if not keyword or keyword.startswith("#"):
        return None
    return keyword, (rest or "").lstrip(_WS)


def split_args(s: str) -> list[str]:
    """misc.c argv_split(): arguments with quotes and escapes removed; a `#` starting one ends the line."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        if s[i] in " \t":
            i += 1
            continue
        if s[i] == "#":
            break
        quote, arg = "", []
        while i < n:
            c = s[i]
            if c == "\\" and i + 1 < n and (s[i + 1] in "'\"\\" or (not quote and s[i + 1] == " ")):
                i += 1
                arg.append(s[i])
            elif not quote and c in " \t":
                break
            elif not quote and c in "\"'":
                quote = c
            elif quote and c == quote:
                quote = ""
            else:
                arg.append(c)
            i += 1
        if quote:
            raise _Bad("a quote is not closed")
        out.append("".join(arg))
    return out


def _expand(text: str, what: str, tokens: Mapping[str, str], env: Mapping[str, str | None] | None) -> str:
    """OpenSSH's percent (and, with `env`, ${VAR}) expansion in one left-to-right pass. Only the
    tokens given and the variables in `env` are known; anything else is an error that names the
    token or the variable, never a value."""
    out: list[str] = []
    i, n = 0, len(text)
    pct, dollar = text.find("%"), (text.find("${") if env is not None else -1)
    while i < n:
        if 0 <= pct < i:                   # each search starts where the last one left off: one pass
            pct = text.find("%", i)
        if 0 <= dollar < i:
            dollar = text.find("${", i)
        j = min((k for k in (pct, dollar) if k >= 0), default=n)
        out.append(text[i:j])
        if j >= n:
            break
        if text[j] == "$":
            end = text.find("}", j + 2)
            if end < 0:
                raise _Bad(f"{what}: `${{` without its `}}`")
            name = text[j + 2:end]
            assert env is not None
            if name not in env:
                raise _Bad(f"{what}: ${{{shown(name, 40)}}} is refused: ctl expands only "
                           + ", ".join(f"${{{v}}}" for v in env) + " (a variable may hold a secret)")
            value = env[name]
            if value is None:
                raise _Bad(f"{what}: ${{{name}}} is not set")
            out.append(value)
            i = end + 1
            continue
        if j + 1 >= n:
            raise _Bad(f"{what}: ends with a lone %")
        t = text[j + 1]
        if t == "%":
            out.append("%")
        elif t in tokens:
            out.append(tokens[t])
        else:
            known = ", ".join(["%%"] + [f"%{k}" for k in tokens])
            raise _Bad(f"{what}: %{shown(t)} is not a token it takes ({known})")
        i = j + 2
    return "".join(out)


def _no_env(value: str, what: str) -> None:
    """`${` where OpenSSH does not expand it: refused, naming the variable only."""
    j = value.find("${")
    if j >= 0:
        end = value.find("}", j)
        name = value[j + 2:end] if end > j else value[j + 2:j + 42]
        raise _Bad(f"{what} does not expand environment variables (nor does OpenSSH): ${{{shown(name, 40)}}} "
                   "is refused")


# ---- the parsed file ------------------------------------------------------------------------

@dataclass(frozen=True)
class Criterion:
    name: str                 # host, originalhost, user, localuser, tagged, all, canonical, final
    negate: bool = False
    arg: str | None = None


@dataclass(frozen=True)
class Entry:
    where: str                # "ssh config <file>, line <n>"
    keyword: str              # as ctl names it (HostName, ...)
    args: tuple[str, ...]
    criteria: tuple[Criterion, ...] = ()
    files: tuple["ConfigFile", ...] = ()     # an Include: the files it read, in order


@dataclass(frozen=True)
class ConfigFile:
    path: str
    entries: tuple[Entry, ...]


def _match_criteria(args: list[str]) -> tuple[Criterion, ...]:
    """readconf.c match_cfg_line(), the syntax only: `exec` refused, what ctl cannot evaluate refused."""
    out: list[Criterion] = []
    attributes, i = 0, 0
    while i < len(args):
        attrib = args[i]
        i += 1
        negate = attrib.startswith("!")
        name = attrib[1:] if negate else attrib
        low = name.lower()
        if low == "all":
            if attributes > 1 or (i < len(args) and args[i] != "" and not args[i].startswith("#")):
                raise _Bad("Match: 'all' must stand alone or right after 'canonical' or 'final'")
            out.append(Criterion("all", negate))
            return tuple(out)
        attributes += 1
        if low in ("canonical", "final"):
            out.append(Criterion(low, negate))
            continue
        key, eq, value = name.partition("=")
        arg: str | None
        if eq and key.lower() in _EQ_FORM:
            low, arg = key.lower(), value
        else:
            arg = args[i] if i < len(args) else None
            i += 1
        if low == "exec":
            raise _Bad(f"Match exec is refused: {_NEVER_RUN} (OpenSSH runs it with a shell)")
        if low in _UNSUPPORTED:
            raise _Bad(f"Match {low} is not supported: ctl cannot tell {_UNSUPPORTED[low]}; "
                       "use Host, or Match host, originalhost, user, localuser or tagged")
        if low not in _CRITERIA:
            raise _Bad(f"Match: unknown criterion {shown(name, 40)!r}")
        if arg is None or (arg == "" and low != "tagged") or arg.startswith("#"):
            raise _Bad(f"Match {low} needs an argument")
        out.append(Criterion(low, negate, arg))
    if not out:
        raise _Bad("Match needs a criterion")
    return tuple(out)


def _entry(keyword: str, rest: str, where: str) -> Entry | None:
    low = keyword.lower()
    if low in _REFUSED:
        name, harmless, why = _REFUSED[low]
        value = rest.lstrip(_WS + "=").rstrip(_WS).lower()
        if value not in harmless:
            raise _Bad(f"{name} is refused: {_NEVER_RUN} ({why})")
        # `ProxyCommand none` still counts: a ProxyJump after it is not taken (readconf.c)
        return Entry(where, name, ("none",)) if name == "ProxyCommand" else None
    name = _NAMES.get(low)
    if name is None:
        return None                       # ignored: ctl neither needs nor uses it
    if not rest:
        raise _Bad(f"{name} has no argument")
    args = split_args(rest)
    if name == "Match":
        return Entry(where, name, tuple(args), _match_criteria(args))
    if name in ("Host", "Include"):
        if not args or "" in args:
            raise _Bad(f"{name}: an empty argument")
        if name == "Include":
            for a in args:
                _expand(a, "Include", dict.fromkeys(_TOKENS["Include"], ""), dict.fromkeys(SAFE_ENV, ""))
        return Entry(where, name, tuple(args))
    if name == "ProxyJump":
        # readconf.c: the rest of the line as written (after whitespace and `=`), up to a `#`
        value = rest.lstrip(_WS + "=").split("#", 1)[0].rstrip(_WS)
        if not value:
            raise _Bad(f"{name} has no argument")
        _no_env(value, name)
        parse_proxy_jump(value, name)
        return Entry(where, name, (value,))
    if not args or args[0] == "":
        raise _Bad(f"{name} has no argument")
    if len(args) > 1:
        raise _Bad(f"{name}: more than one argument")
    value = args[0]
    if name in _ENV:
        _expand(value, name, dict.fromkeys(_TOKENS[name], ""), dict.fromkeys(SAFE_ENV, ""))
    else:
        _no_env(value, name)
        if name in _TOKENS:
            _expand(value, name, dict.fromkeys(_TOKENS[name], ""), None)
    if name in ("HostName", "Tag", "User") and len(value) > MAX_NAME:
        raise _Bad(f"{name}: longer than {MAX_NAME} characters")
    if name == "HostName" and not _HOSTNAME.fullmatch(value.replace("%h", "h").replace("%%", "")):
        raise _Bad(f"HostName {shown(value, 60)!r} is not a host name or address")
    if name == "Port" and not (value.isascii() and value.isdigit() and 1 <= int(value) <= 65535):
        raise _Bad(f"Port {shown(value, 20)!r} is not a port number (1..65535)")
    if name == "CanonicalizeHostname" and value.lower() not in ("yes", "no", "true", "false", "always"):
        raise _Bad(f"CanonicalizeHostname {shown(value, 20)!r} is not yes, no or always")
    return Entry(where, name, (value,))


def parse_text(text: str, name: str = "config") -> ConfigFile:
    """One file's lines (pure). Include lines keep their patterns; `load` reads the files."""
    entries = []
    for n, line in enumerate(text.split("\n"), 1):
        where = f"ssh config {shown(name)}, line {n}"
        try:
            parts = split_line(line)
            e = _entry(*parts, where) if parts else None
        except (_Bad, ParameterError) as exc:
            raise ParameterError(f"{where}: {exc}") from None
        if e is not None:
            entries.append(e)
    return ConfigFile(name, tuple(entries))


# ---- patterns ----------------------------------------------------------------------------------

def _piece(text: str) -> re.Pattern[str]:
    """A piece of a pattern between `*`s: literal text and `?`, no quantifier."""
    return _short_piece(text) if len(text) <= 256 else _compile_piece(text)


def _compile_piece(text: str) -> re.Pattern[str]:
    return re.compile("".join("." if c == "?" else re.escape(c) for c in text), re.DOTALL)


_short_piece = functools.lru_cache(maxsize=1024)(_compile_piece)


def match_pattern(s: str, pattern: str) -> bool:
    """match.c match_pattern(): `*` any run, `?` any one character, everything else itself."""
    if "*" not in pattern:
        return len(s) == len(pattern) and _piece(pattern).fullmatch(s) is not None
    pieces = pattern.split("*")
    first, last, middle = pieces[0], pieces[-1], pieces[1:-1]
    if len(first) + len(last) > len(s) or not _piece(first).match(s) \
            or not _piece(last).fullmatch(s, len(s) - len(last)):
        return False
    pos, end = len(first), len(s) - len(last)
    for p in middle:
        if not p:
            continue
        m = _piece(p).search(s, pos, end)
        if m is None:
            return False
        pos = m.end()
    return True


def match_list(s: str, patterns: str, lower: bool = False) -> int:
    """match.c match_pattern_list(): 1 if a pattern matches, -1 if a negated one does, else 0."""
    positive = 0
    for sub in patterns.split(","):
        negated = sub.startswith("!")
        if negated:
            sub = sub[1:]
        if len(sub) >= 1023:
            return 0
        if match_pattern(s, sub.lower() if lower else sub):
            if negated:
                return -1
            positive = 1
    return positive


# ---- resolving a host ------------------------------------------------------------------------

@dataclass(frozen=True)
class Local:
    """What the tokens say about this machine, read once (so `resolve` is pure)."""

    user: str
    uid: int
    home: str
    hostname: str
    env: Mapping[str, str | None] = field(default_factory=dict)

    @classmethod
    def here(cls, secret_env: Iterable[str] = ()) -> "Local":
        uid = os.getuid()
        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:
            user = str(uid)
        secret = set(secret_env)
        return cls(user, uid, os.path.expanduser("~"), socket.gethostname(),
                   {k: os.environ.get(k) for k in SAFE_ENV if k not in secret})


@dataclass(frozen=True)
class Resolved:
    host: str                          # where to connect
    user: str
    port: int
    jump: str | None                   # ProxyJump as given or from the file ("none": no bastion)
    identity_files: tuple[Path, ...]   # the file's IdentityFiles, tokens and ~ expanded, in order
    supplied: tuple[str, ...]          # the directives the file supplied a value for


class _State:
    def __init__(self, user: str | None, port: int | None, jump: str | None):
        self.values: dict[str, tuple[str, str]] = {}
        for k, v in (("User", user), ("Port", port), ("ProxyJump", jump)):
            if v is not None:
                self.values[k] = (str(v), "")
        self.identity: list[tuple[str, str]] = []     # (as written, where)

    def get(self, key: str) -> str | None:
        v = self.values.get(key)
        return v[0] if v else None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class OpenSSHConfig:
    """A loaded config: `resolve` walks it for one host (pure)."""

    def __init__(self, root: ConfigFile, local: Local):
        self.root = root
        self.local = local
        self.final_pass = any(c.name == "final" and not c.negate for e in self._all(root) for c in e.criteria)

    def _all(self, f: ConfigFile) -> Iterable[Entry]:
        for e in f.entries:
            yield e
            for g in e.files:
                yield from self._all(g)

    def resolve(self, host: str, user: str | None = None, port: int | None = None, jump: str | None = None, *,
                default_user: str, default_port: int) -> Resolved:
        """`host` as the inventory names it; `user`, `port`, `jump`: given (they win, like ssh's
        command line); the defaults apply where neither is given nor the file says."""
        try:
            return self._resolve(host, user, port, jump, default_user, default_port)
        except _Bad as exc:
            raise ParameterError(str(exc)) from None

    def _resolve(self, host: str, user: str | None, port: int | None, jump: str | None, default_user: str,
                 default_port: int) -> Resolved:
        st = _State(user, port, jump)
        self._walk(self.root, st, host, host, False, True, False)
        if self.final_pass:                  # ssh.c: HostName taken into use, then the file again
            name = self._hostname(st, host)
            st.values["HostName"] = (name, st.values.get("HostName", ("", ""))[1])
            self._walk(self.root, st, name if _is_address(name) else name.lower(), host, True, True, False)
        canon = st.values.get("CanonicalizeHostname")
        if canon and canon[0].lower() in ("yes", "true", "always"):
            raise _Bad(f"{canon[1]}: CanonicalizeHostname {canon[0]} is not supported: ctl never canonicalizes "
                       "host names; give the full name (HostName or the inventory's address)")
        supplied = [k for k in ("HostName", "User", "Port", "ProxyJump") if st.values.get(k, ("", ""))[1]]
        real = self._hostname(st, host) if st.values.get("HostName", ("", ""))[1] else host
        final_port = int(st.get("Port") or default_port)
        jump_text = st.get("ProxyJump")
        if jump_text is not None and jump_text.lower() == "none" and "ProxyJump" in supplied:
            supplied.remove("ProxyJump")
        tokens = {"d": self.local.home, "h": real, "i": str(self.local.uid), "j": jump_text or "",
                  "k": st.get("HostKeyAlias") or host, "L": self.local.hostname.split(".", 1)[0],
                  "l": self.local.hostname, "n": host, "p": str(final_port), "u": self.local.user}
        final_user = user or default_user
        if user is None and st.get("User") is not None:
            where = st.values["User"][1]
            final_user = _expand(st.values["User"][0], f"{where}: User", tokens, self.local.env)
        if not re.fullmatch(NAME_PATTERNS["user"], final_user):
            raise _Bad(f"ssh config: user {shown(final_user, 40)!r} for {host} is not a valid login name")
        tokens["r"] = final_user
        tokens["C"] = hashlib.sha1((tokens["l"] + real + tokens["p"] + final_user + tokens["j"])
                                   .encode()).hexdigest()
        keys = []
        for raw, where in st.identity:
            path = os.path.expanduser(raw) if raw.startswith("~") else raw
            keys.append(Path(_expand(path, f"{where}: IdentityFile", tokens, self.local.env)))
        if keys:
            supplied.append("IdentityFile")
        return Resolved(real, final_user, final_port, jump_text, tuple(keys), tuple(supplied))

    def _hostname(self, st: _State, host: str) -> str:
        v = st.values.get("HostName")
        if v is None:
            return host
        name = _expand(v[0], f"{v[1]}: HostName", {"h": host}, None)
        if not _HOSTNAME.fullmatch(name) or len(name) > MAX_NAME:
            raise _Bad(f"{v[1]}: HostName {shown(name, 60)!r} is not a host name or address")
        return name

    def _walk(self, f: ConfigFile, st: _State, host: str, original: str, final: bool, active: bool,
              never: bool) -> None:
        for e in f.entries:
            if e.keyword == "Host":
                active = not never and self._host_line(e.args, host)
            elif e.keyword == "Match":
                active = self._match(e.criteria, st, host, original, final) and not never
            elif e.keyword == "Include":
                for g in e.files:          # readconf.c: the including file's state is kept
                    self._walk(g, st, host, original, final, active, never or not active)
            elif active:
                self._apply(e, st)

    @staticmethod
    def _host_line(patterns: tuple[str, ...], host: str) -> bool:
        active = False
        for p in patterns:
            if p.startswith("!"):
                if match_pattern(host, p[1:]):
                    return False
            elif match_pattern(host, p):
                active = True
        return active

    def _match(self, criteria: tuple[Criterion, ...], st: _State, host: str, original: str, final: bool) -> bool:
        result = True
        for c in criteria:
            if c.name == "all":
                return result and not c.negate
            if c.name in ("canonical", "final"):
                r = final
            elif c.name == "host":
                name = st.get("HostName") if final else (self._hostname(st, host) if "HostName" in st.values
                                                         else host)
                r = match_list((name or host).lower(), c.arg or "", lower=True) == 1
            elif c.name == "originalhost":
                r = match_list(original.lower(), c.arg or "", lower=True) == 1
            elif c.name == "user":
                r = match_list(st.get("User") or self.local.user, c.arg or "") == 1
            elif c.name == "localuser":
                r = match_list(self.local.user, c.arg or "") == 1
            else:                          # tagged
                tag = st.get("Tag") or ""
                r = (c.arg == "") if tag == "" else match_list(tag, c.arg or "") == 1
            if r == c.negate:
                result = False
        return result

    @staticmethod
    def _apply(e: Entry, st: _State) -> None:
        value = e.args[0]
        if e.keyword == "IdentityFile":
            if value.lower() != "none" and value not in (v for v, _w in st.identity):
                if len(st.identity) >= MAX_IDENTITY_FILES:
                    raise _Bad(f"{e.where}: more than {MAX_IDENTITY_FILES} IdentityFiles")
                st.identity.append((value, e.where))
        elif e.keyword == "ProxyJump":
            # readconf.c parse_jump(): "none" only where nothing is set yet; a bastion also
            # only if no ProxyCommand (here only ever `none`) came first
            if value.lower() == "none" or "ProxyCommand" not in st.values:
                st.values.setdefault("ProxyJump", (value, e.where))
        elif e.keyword != "Include":
            st.values.setdefault(e.keyword, (value, e.where))


# ---- reading the files -------------------------------------------------------------------------

class _Budget:
    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0


def _read(path: Path, budget: _Budget, where: str, top: bool) -> str | None:
    """A config file's text (None: a directory or a vanished file in an Include, as OpenSSH skips
    them). Never blocks on a FIFO; refuses what OpenSSH refuses (writable by others)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        if top:
            raise ParameterError(f"ssh config_file {shown(path)} does not exist") from None
        return None
    except OSError as exc:
        raise ParameterError(f"{where}: {shown(path)}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode) and not top:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise ParameterError(f"{where}: {shown(path)} is not a regular file")
        if (st.st_uid not in (0, os.getuid())) or st.st_mode & 0o022:
            raise ParameterError(f"{where}: {shown(path)} is owned by uid {st.st_uid} with mode "
                                 f"{stat.S_IMODE(st.st_mode):04o}: another account could change it "
                                 "(OpenSSH refuses such a file too)")
        budget.files += 1
        if budget.files > MAX_FILES:
            raise ParameterError(f"{where}: more than {MAX_FILES} files read for one ssh config")
        data = os.read(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ParameterError(f"{where}: {shown(path)}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise ParameterError(f"{where}: {shown(path)} is larger than {MAX_FILE_BYTES >> 10} KiB")
    budget.bytes += len(data)
    if budget.bytes > MAX_TOTAL_BYTES:
        raise ParameterError(f"{where}: more than {MAX_TOTAL_BYTES >> 20} MiB read for one ssh config")
    return data.decode("utf-8", "replace")


def _include_paths(pattern: str, where: str, local: Local) -> list[Path]:
    """readconf.c: tokens and variables expanded, relative to ~/.ssh, glob(3) in lexical order."""
    try:
        p = _expand(pattern, "Include", {k: v for k, v in (("d", local.home), ("i", str(local.uid)),
                                                            ("L", local.hostname.split(".", 1)[0]),
                                                            ("l", local.hostname), ("u", local.user))},
                    local.env)
    except _Bad as exc:
        raise ParameterError(f"{where}: {exc}") from None
    if p.startswith("~"):
        p = os.path.expanduser(p)
    elif not p.startswith("/"):
        p = os.path.join(local.home, ".ssh", p)
    return [Path(x) for x in sorted(glob.glob(p))]


def _load(path: Path, local: Local, budget: _Budget, chain: tuple[tuple[str, str], ...], where: str,
          top: bool) -> ConfigFile | None:
    real = os.path.realpath(path)
    if any(r == real for r, _n in chain):
        names = " -> ".join([n for _r, n in chain] + [shown(path)])
        raise ParameterError(f"{where}: {shown(path)} includes itself ({names}); a file may appear once in "
                             "a chain of Includes")
    if len(chain) > MAX_DEPTH:
        raise ParameterError(f"{where}: Includes nested more than {MAX_DEPTH} deep (OpenSSH's limit)")
    text = _read(path, budget, where, top)
    if text is None:
        return None
    parsed = parse_text(text, str(path))
    chain = chain + ((real, shown(path)),)
    entries = []
    for e in parsed.entries:
        if e.keyword == "Include":
            files = []
            for pattern in e.args:
                for p in _include_paths(pattern, e.where, local):
                    f = _load(p, local, budget, chain, e.where, False)
                    if f is not None:
                        files.append(f)
            e = replace(e, files=tuple(files))
        entries.append(e)
    return ConfigFile(parsed.path, tuple(entries))


def load(path: Path, secret_env: Iterable[str] = ()) -> OpenSSHConfig:
    """Read the config at `path` and every file it includes, checking every line of each (I/O
    here only). `secret_env`: names of environment variables that hold secrets, never expanded."""
    local = Local.here(secret_env)
    root = _load(Path(path), local, _Budget(), (), f"ssh config_file {shown(path)}", True)
    assert root is not None
    return OpenSSHConfig(root, local)
