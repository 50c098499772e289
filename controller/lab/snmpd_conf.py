"""snmpd.conf generator for the agents ctl itself runs (virtual rack bridges/switch, tests, bench).

Pure functions: text out, nothing started. The same generator is used by the virtual rack
and by tests/support/snmpd.py so that what the tests poll is what the rack runs.

Facts this is built on (net-snmp 5.9.3, Debian 12; see tests/fixtures/recorded/05_snmp_ifmib.md):
- Debian's stock snmpd.conf only exposes the `system` group (view "systemonly"): IF-MIB
  answers "No more variables left in this MIB View". We therefore always emit our own view
  with system (1.3.6.1.2.1.1), interfaces/ifTable (.2) and ifMIB/ifXTable (.31).
- Debian ships no MIB text; every OID here is numeric, and the agent is run with `MIBS=` in
  its environment so it does not try (and fail, ~420 log lines) to load MIB modules.
- The agent gets its own `SNMP_PERSISTENT_DIR` (else it writes /var/lib/snmp, shared by
  every agent on the machine) and `SNMPCONFPATH` set to that same directory, and is started
  with `-c FILE` but WITHOUT `-C`. Measured: `-C` ("no config files but -c") also skips the
  persistent file, so every start gets a new random engineID and engineBoots stays 1; a v3
  manager that knew the agent (pysnmp 7) then times out forever after an agent restart.
  With SNMPCONFPATH=<persistent dir> the agent reads only our file plus its own state
  (engineBoots 1, 2, 3... and the same engineID across restarts), never /etc/snmp.
  Keep the directory across restarts of one agent; never share it between agents.
- `createUser` in the config file is accepted by snmpd; it stores the localized keys in the
  persistent dir on first start. Passphrases must be at least 8 characters (net-snmp refuses
  shorter ones at start with "Error: passphrase chosen is below the length requirements").
"""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from pathlib import Path

from controller.errors import ParameterError

# What the poller reads: system (sysUpTime), ifTable (ifInDiscards/ifInErrors), ifXTable.
DEFAULT_VIEW_OIDS: tuple[str, ...] = (".1.3.6.1.2.1.1", ".1.3.6.1.2.1.2", ".1.3.6.1.2.1.31")
VIEW_NAME = "ctlview"

# Inventory spelling (controller.inventory.SNMP) -> net-snmp createUser spelling.
AUTH_PROTOCOLS: dict[str, str] = {
    "md5": "MD5", "sha": "SHA", "sha224": "SHA-224", "sha256": "SHA-256",
    "sha384": "SHA-384", "sha512": "SHA-512",
}
# net-snmp's "AES-192"/"AES-256" use the Blumenthal key extension (draft-blumenthal-aes-usm);
# the pysnmp side must use USM_PRIV_CFB192/256_AES_BLUMENTHAL to talk to them (see snmp.py).
PRIV_PROTOCOLS: dict[str, str] = {"des": "DES", "aes": "AES", "aes192": "AES-192", "aes256": "AES-256"}

# Tokens we write into the config: no whitespace, quotes, `#` or control characters, so a
# value can never end a directive early or start a new one (config injection).
_TOKEN = re.compile(r"^[A-Za-z0-9_.:@%+=,/-]+$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,31}$")
_FREE_TEXT = re.compile(r"^[^\x00-\x1f\x7f\"\\]*$")


def _token(value: str, what: str, *, min_len: int = 1) -> str:
    # The value itself never appears in the message: it may be a secret.
    if not isinstance(value, str) or not _TOKEN.match(value):
        raise ParameterError(f"{what}: only letters, digits and _.:@%+=,/- are allowed (no spaces or quotes)")
    if len(value) < min_len:
        raise ParameterError(f"{what}: must be at least {min_len} characters (net-snmp requirement)")
    return value


def _listen_spec(item: str) -> str:
    """`127.0.0.1:16161`, `udp:10.0.0.2:161`, `0.0.0.0:161`, `[::1]:161`, `udp6:[::1]:161`."""
    text = item.strip()
    if text.startswith(("udp:", "udp6:")):
        proto, _, rest = text.partition(":")
    else:
        proto, rest = "", text
    m = re.match(r"^\[([0-9A-Fa-f:.]+)\]:(\d+)$", rest) or re.match(r"^([0-9.]+):(\d+)$", rest)
    if not m:
        raise ParameterError(f"snmpd listen address {item!r}: expected ADDRESS:PORT (e.g. 127.0.0.1:16161)")
    addr, port = m.group(1), int(m.group(2))
    if not 1 <= port <= 65535:
        raise ParameterError(f"snmpd listen address {item!r}: port out of range")
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        raise ParameterError(f"snmpd listen address {item!r}: {addr!r} is not an IP address") from None
    if ip.version == 6:
        return f"udp6:[{ip}]:{port}"
    if proto == "udp6":
        raise ParameterError(f"snmpd listen address {item!r}: udp6 needs an IPv6 address")
    return f"udp:{ip}:{port}"


def render_snmpd_conf(
    listen: str | Sequence[str],
    community: str | None,
    v3_user: str | None,
    auth_key: str | None,
    priv_key: str | None,
    *,
    auth_protocol: str = "sha",
    priv_protocol: str = "aes",
    community_source: str = "default",
    view_oids: Sequence[str] = DEFAULT_VIEW_OIDS,
    sys_location: str = "ctl testbed",
    sys_contact: str = "ctl",
    sys_name: str | None = None,
) -> str:
    """The text of a read-only snmpd.conf.

    listen: one or more `ADDRESS:PORT` (`udp:`/`udp6:` prefixes accepted).
    community: v2c read-only community (None: no v2c access).
    v3_user, auth_key, priv_key: a USM user with authPriv access (None for all three: no v3).
    community_source: which sources may use the community (`default` = any, or a CIDR).
    The result contains secrets: write it with mode 0600 and never log it.
    """
    items = [listen] if isinstance(listen, str) else list(listen)
    if not items:
        raise ParameterError("snmpd listen: at least one ADDRESS:PORT is needed")
    addrs = [_listen_spec(x) for x in items]
    if community is None and v3_user is None:
        raise ParameterError("snmpd config: give a v2c community, a v3 user, or both")
    if community_source != "default":
        try:
            ipaddress.ip_network(community_source, strict=False)
        except ValueError:
            raise ParameterError(f"community_source {community_source!r}: expected `default` or a CIDR") from None
    for what, text in (("sys_location", sys_location), ("sys_contact", sys_contact),
                       ("sys_name", sys_name or "")):
        if not _FREE_TEXT.match(text):
            raise ParameterError(f"{what}: no quotes, backslashes or control characters")
    oids = []
    for oid in view_oids:
        if not re.match(r"^\.?1(\.\d+)+$", oid):
            raise ParameterError(f"view OID {oid!r}: numeric OIDs only (Debian ships no MIB files)")
        oids.append(oid if oid.startswith(".") else "." + oid)

    lines = [
        "# generated by controller.lab.snmpd_conf -- read-only agent for ctl",
        "# (contains secrets: keep mode 0600, do not log)",
        f"agentAddress {','.join(addrs)}",
    ]
    lines += [f"view {VIEW_NAME} included {oid}" for oid in oids]
    if community is not None:
        _token(community, "SNMP community")
        lines.append(f"rocommunity {community} {community_source} -V {VIEW_NAME}")
        if any(a.startswith("udp6:") for a in addrs):
            lines.append(f"rocommunity6 {community} default -V {VIEW_NAME}")
    if v3_user is not None:
        if not _NAME.match(v3_user):
            raise ParameterError(f"SNMP v3 user {v3_user!r}: letters, digits, _.- (max 32), starting with a letter")
        if auth_key is None or priv_key is None:
            raise ParameterError("SNMP v3 user needs auth_key and priv_key (authPriv only)")
        try:
            auth = AUTH_PROTOCOLS[auth_protocol]
            priv = PRIV_PROTOCOLS[priv_protocol]
        except KeyError as exc:
            raise ParameterError(f"SNMP v3 protocol {exc.args[0]!r} unknown "
                                 f"(auth: {', '.join(AUTH_PROTOCOLS)}; priv: {', '.join(PRIV_PROTOCOLS)})") from None
        _token(auth_key, "SNMP v3 auth_key", min_len=8)
        _token(priv_key, "SNMP v3 priv_key", min_len=8)
        lines.append(f"createUser {v3_user} {auth} {auth_key} {priv} {priv_key}")
        lines.append(f"rouser {v3_user} authpriv -V {VIEW_NAME}")
    lines.append(f"sysLocation {sys_location}")
    lines.append(f"sysContact {sys_contact}")
    if sys_name:
        lines.append(f"sysName {sys_name}")
    return "\n".join(lines) + "\n"


def snmpd_env(persistent_dir: str | Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for running snmpd: its own persistent dir, no MIB loading.

    `base` (e.g. os.environ) is copied, with every SNMP-related variable replaced, so a
    caller's SNMPCONFPATH/MIBDIRS cannot make the agent read some other configuration.
    """
    env = {k: v for k, v in (base or {}).items()
           if not k.startswith(("SNMP", "MIB")) and k not in ("MIBS", "MIBDIRS")}
    env.setdefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    env["SNMP_PERSISTENT_DIR"] = str(persistent_dir)
    env["MIBS"] = ""
    # An empty MIB search path as well: nothing to load, nothing to complain about.
    env["MIBDIRS"] = str(persistent_dir)
    # The config search path replaces /etc/snmp:/usr/share/snmp:...:~/.snmp; it must contain
    # the persistent dir, or engineID/engineBoots are not read back (see module doc).
    env["SNMPCONFPATH"] = str(persistent_dir)
    return env


def snmpd_argv(conf_path: str | Path, *, snmpd: str = "snmpd", extra: Sequence[str] = ()) -> list[str]:
    """argv for a foreground snmpd reading `conf_path` (plus its persistent state), logging to stdout.

    -f foreground (the caller owns the PID), -Lo log to stdout, -c our file. Not -C: see the
    module doc; run it with snmpd_env(), whose SNMPCONFPATH keeps /etc/snmp out.
    No `-p pidfile`: the PID of the process the caller started is the one to stop.
    """
    return [snmpd, "-f", "-Lo", "-c", str(conf_path), *extra]
