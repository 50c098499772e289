"""Typed, strict rack model loaded from YAML.

A typo or a missing field is an error naming the file, the line and the field, never
silently ignored (pydantic, `extra="forbid"`). Secrets are references: the name of an
environment variable or the path of a file, never the value.
"""
from __future__ import annotations

import ipaddress
import os
import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from controller.argutil import NAME_PATTERNS, argv_value
from controller.errors import InventoryError, ParameterError
from controller.inventory_fields import MAC, AbsPath, GpsdAddress, IfName, UserName, XPath, first_line
from controller.modelerrors import format_first
from controller.schema_patterns import CIDR, DELAY, IP, IPV4, MGMT, PROBABILITY, QUEUE, RATE, value_schema
from controller.settings import existing_or_shipped, packaged_inventory
from controller.sshconfig import parse_proxy_jump
from controller.settings import resolve as resolve_setting
from controller.units import parse_delay_us, parse_probability, parse_queue, parse_rate
from controller.yamlload import load_yaml_with_lines

FORMAT_VERSION = 1
_NAME = "^" + NAME_PATTERNS["name"] + "$"


class Strict(BaseModel):
    # validators built at first use: Inventory's once, not each nested model's too (issue 28)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_numbers(cls, data: Any) -> Any:
        # pydantic takes YAML's true/yes/on for 1 in a number field (`pipe: yes` would be pipe 1)
        for name, v in (data.items() if isinstance(data, dict) else ()):
            f = cls.model_fields.get(name) if isinstance(name, str) else None
            if isinstance(v, bool) and f is not None and {int, float} & {f.annotation, *get_args(f.annotation)}:
                raise ValueError(f"{name}: {v!r} is not a number")
        return data


class Role(str, Enum):
    ENDPOINT = "endpoint"
    BRIDGE = "bridge"
    MODEM_HOST = "modem-host"
    SWITCH = "switch"
    ROUTER = "router"


class SecretRef(Strict):
    """Where a secret lives: an environment variable, or a file (first line). Never the value."""

    env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", description="variable holding the secret")
    file: AbsPath | None = Field(None, description="file whose first line is the secret (mode 0600; ~ expanded)")

    @model_validator(mode="after")
    def _one(self) -> "SecretRef":
        if self.env is None and self.file is None:
            raise ValueError("give `env` (variable name) or `file` (path): secrets are references")
        return self

    def resolve(self, what: str) -> str:
        if self.env and os.environ.get(self.env):
            return os.environ[self.env]
        problem = ""
        if self.file is not None:
            try:
                first = first_line(self.file)
            except OSError as exc:
                problem = f"; {self.file}: {exc.strerror or exc}"
            else:
                if first:
                    return first
                problem = f"; {self.file} is empty"
        where = " or ".join(x for x in (f"${self.env}" if self.env else "",
                                         f"the file {self.file}" if self.file else "") if x)
        raise ParameterError(f"{what}: secret not available (set {where}{problem})")

    def describe(self) -> str:
        parts = []
        if self.env:
            parts.append(f"env:{self.env}")
        if self.file:
            parts.append(f"file:{self.file}")
        return ",".join(parts)


_USER = Field("root", description="login name on the host (root, or an account with `sudo`)")
_PORT = Field(22, ge=1, le=65535, description="SSH port of the host")
_KEY_FILE = Field(None, description="private key ctl logs in with (absolute, ~ or ${CTL_STATE_DIR}; never a value)")
_KNOWN_HOSTS = Field(None, description="known_hosts holding every host's and bastion's key (always checked)")


# Bounds: an infinite or absurd timeout is a hang, not a setting.
_CONNECT_TIMEOUT = Field(10.0, gt=0, le=600, description="seconds to wait for an SSH connection")
_COMMAND_TIMEOUT = Field(60.0, gt=0, le=86400, description="seconds a remote command may take at most")


_SUDO = Field(False, description=(
    "run every command through `sudo -n` (an account that is not root): checked at connect, "
    "refused with the host and command named when the account cannot"))
_PROXY_JUMP = Field(None, description=(
    "bastion hosts, OpenSSH ProxyJump syntax `[user@]host[:port][,...]`; every hop's host key is "
    "checked against known_hosts; 'none' overrides a ProxyJump of the ssh config"))
_AGENT = Field(False, description="also use the keys of the ssh-agent at $SSH_AUTH_SOCK (never forwarded)")
_CONFIG_FILE = Field(None, description=(
    "an OpenSSH client config (e.g. ~/.ssh/config) to take HostName, User, Port, IdentityFile and "
    "ProxyJump from; values set here win"))
_PASSPHRASE = Field(None, description="where the passphrase of an encrypted key_file is (a secret reference)")


class SSH(Strict):
    """One host's SSH settings, merged from the inventory's defaults and the host's own."""

    user: UserName = _USER
    port: int = _PORT
    key_file: AbsPath | None = _KEY_FILE
    known_hosts: AbsPath = Field(description="known_hosts file holding the host's key")
    connect_timeout: float = _CONNECT_TIMEOUT
    command_timeout: float = _COMMAND_TIMEOUT
    sudo: bool = _SUDO
    proxy_jump: str | None = _PROXY_JUMP
    agent: bool = _AGENT
    config_file: AbsPath | None = _CONFIG_FILE
    key_passphrase: SecretRef | None = _PASSPHRASE
    explicit: frozenset[str] = Field(frozenset(), description="the fields the inventory set (not defaults)")


class SSHDefaults(Strict):
    user: UserName = _USER
    port: int = _PORT
    key_file: AbsPath | None = _KEY_FILE
    known_hosts: AbsPath | None = _KNOWN_HOSTS
    connect_timeout: float = _CONNECT_TIMEOUT
    command_timeout: float = _COMMAND_TIMEOUT
    sudo: bool = _SUDO
    proxy_jump: str | None = _PROXY_JUMP
    agent: bool = _AGENT
    config_file: AbsPath | None = _CONFIG_FILE
    key_passphrase: SecretRef | None = _PASSPHRASE

    @field_validator("proxy_jump")
    @classmethod
    def _jump(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_proxy_jump(v)
            except ParameterError as exc:
                raise ValueError(str(exc)) from None
        return v


class SNMP(Strict):
    version: Literal["2c", "3"] = Field(description="SNMP version: \"2c\" (community) or \"3\" (authPriv)")
    port: int = Field(161, ge=1, le=65535, description="UDP port of the agent")
    community: SecretRef | None = Field(None, description="v2c: where the community string is (a secret reference)")
    user: str | None = Field(None, description="v3: the USM user name")
    auth_protocol: Literal["md5", "sha", "sha224", "sha256", "sha384", "sha512"] | None = Field(None, description="v3")
    auth_key: SecretRef | None = Field(None, description="v3: where the authentication key is (a secret reference)")
    priv_protocol: Literal["des", "aes", "aes192", "aes256"] | None = Field(None, description="v3: privacy protocol")
    priv_key: SecretRef | None = Field(None, description="v3: where the privacy key is (a secret reference)")
    timeout: float = Field(1.0, gt=0, le=60, description="seconds to wait for one reply")
    retries: int = Field(1, ge=0, le=10, description="requests sent again after a timeout")
    interfaces: list[str] = Field(default_factory=list, description="ifName values to poll; empty = all")
    refresh_s: float = Field(3.0, ge=0, le=60, description=(
        "how old the agent's IF-MIB counter values may be, in seconds: net-snmp serves them from a cache "
        "reloaded every 3 s (the default); FreeBSD's bsnmpd reads them on each request: 0. See "
        "firmware-notes/snmp-agents.md"))
    refresh_periodic: bool = Field(True, description=(
        "the agent reloads its counter cache on a fixed timer (net-snmp); false = on demand or unknown"))

    @model_validator(mode="after")
    def _creds(self) -> "SNMP":
        if self.version == "2c" and self.community is None:
            raise ValueError("SNMP v2c needs `community` (a secret reference)")
        if self.version == "3":
            if not self.user or not self.auth_key or not self.priv_key or not self.auth_protocol \
                    or not self.priv_protocol:
                raise ValueError("SNMP v3 needs user, auth_protocol, auth_key, priv_protocol, priv_key "
                                 "(authPriv; keys are secret references)")
        return self


class Mgmt(Strict):
    address: str = Field(description="management IP address or host name (ctl's SSH and SNMP go there)",
                         json_schema_extra={"pattern": MGMT})

    @field_validator("address")
    @classmethod
    def _addr(cls, v: str) -> str:
        try:
            ipaddress.ip_address(v)
        except ValueError:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]*", v):
                raise ValueError(f"{v!r} is neither an IP address nor a host name") from None
        return v


class Interface(Strict):
    """A data interface. It attaches to one L2 segment: a side of a link (`link` + `side`, the
    segment `<link>.<side>` unless the link names another) or a named segment (`segment`)."""

    name: IfName = Field(description="interface name on the host (eth1, enp3s0f0, em0; at most 15 characters)")
    address: str | None = Field(None, description="its address with prefix length (10.1.0.11/24)",
                                json_schema_extra={"pattern": CIDR})
    link: str | None = Field(None, description="the link (a key of `links`) this interface is on; give `side` too")
    side: Literal["a", "b"] | None = Field(None, description="which side of `link`: a (senders) or b (receivers)")
    segment: str | None = Field(None, description="or: the named segment (a key of `segments`) it is on")
    gateway: str | None = Field(None, description="default route via this address (the virtual rack installs it)",
                                json_schema_extra={"pattern": IP})
    mac: str | None = Field(None, pattern=MAC, description="MAC address to give it (virtual rack), aa:bb:cc:dd:ee:ff")

    @field_validator("address")
    @classmethod
    def _cidr(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            ipaddress.ip_interface(v)
        except ValueError:
            raise ValueError(f"{v!r} is not an address with prefix length (e.g. 10.1.0.11/24)") from None
        if "/" not in v:
            raise ValueError(f"{v!r} needs a prefix length (e.g. {v}/24)")
        return v

    @model_validator(mode="after")
    def _link_side(self) -> "Interface":
        if (self.link is None) != (self.side is None):
            raise ValueError("an interface on a link needs both `link` and `side`")
        if self.link is not None and self.segment is not None:
            raise ValueError("an interface attaches to a link side or to a `segment`, not both")
        if self.gateway is not None:
            if self.address is None:
                raise ValueError("a `gateway` needs the interface's own `address`")
            try:
                gw = ipaddress.ip_address(self.gateway)
            except ValueError:
                raise ValueError(f"gateway {self.gateway!r} is not an IP address") from None
            net = ipaddress.ip_interface(self.address).network
            if gw not in net or gw == ipaddress.ip_interface(self.address).ip:
                raise ValueError(f"gateway {gw} is not another address of {net}")
        return self

    @property
    def ip(self) -> str | None:
        return str(ipaddress.ip_interface(self.address).ip) if self.address else None


class TcShaper(Strict):
    kind: Literal["tc"] = Field(description="tc: Linux tc (tbf + pfifo/bfifo)")


class DnpipeShaper(Strict):
    kind: Literal["dnpipe"] = Field(description="dnpipe: ctl's forwarder (bridges/dnpipe)")
    binary: XPath = Field(Path("dnpipe"), description="the dnpipe program on the bridge (a path, or a name on PATH)")
    control_dir: AbsPath = Field(Path("/run/dnpipe"), description="directory of the forwarders' control sockets")


class DummynetShaper(Strict):
    kind: Literal["dummynet"] = Field(description="dummynet: FreeBSD ipfw/dnctl pipes")
    tool: Literal["auto", "ipfw", "dnctl"] = Field("auto", description=(
        "what configures the pipes: auto (dnctl from FreeBSD 14, else ipfw), or forced"))
    rule_range: tuple[int, int] = Field((10000, 10999), description="[low, high]: the ipfw rule numbers ctl may use")
    pipe_range: tuple[int, int] = Field((10000, 10999), description="[low, high]: the pipe numbers ctl may use")

    @model_validator(mode="after")
    def _ranges(self) -> "DummynetShaper":
        for name, (lo, hi) in (("rule_range", self.rule_range), ("pipe_range", self.pipe_range)):
            if not (1 <= lo <= hi <= 65534):
                raise ValueError(f"{name} must be 1 <= low <= high <= 65534")
        return self


ShaperSpec = Annotated[TcShaper | DnpipeShaper | DummynetShaper, Field(discriminator="kind")]


class Modem(Strict):
    family: Literal["mmcli", "qmicli", "at-quectel", "at-sierra", "at-huawei", "at-generic", "wimax"] = Field(
        description="its tool or AT dialect")
    device: str = Field(description="the modem's device: a path (/dev/ttyUSB2, /dev/cdc-wdm0); for mmcli the modem's "
                        "equipment id (IMEI), device id, physical device, D-Bus path, index or 'any'")
    baud: int = Field(115200, ge=50, le=4_000_000, description="serial speed of an AT port, bit/s")
    interface: IfName | None = Field(None, description="the network interface the modem provides (wwan0)")

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        try:
            return argv_value(v, "device")
        except ParameterError as exc:
            raise ValueError(str(exc).removeprefix("device: ")) from None


class GPS(Strict):
    gpsd: GpsdAddress = Field(
        "127.0.0.1:2947", description="HOST:PORT of gpsd (an argument of gpspipe)")


class PortForward(Strict):
    """Destination NAT on a router: traffic to the outside address on `ports` goes to `to`."""

    proto: Literal["tcp", "udp"] = Field(description="tcp or udp")
    ports: str = Field(pattern=r"^[0-9]{1,5}(-[0-9]{1,5})?$", description="one port or a range low-high")
    to: str = Field(description="the inside host's IPv4 address", json_schema_extra={"pattern": IPV4})

    @field_validator("to")
    @classmethod
    def _to(cls, v: str) -> str:
        try:
            if ipaddress.ip_address(v).version != 4:
                raise ValueError
        except ValueError:
            raise ValueError(f"{v!r} is not an IPv4 address") from None
        return v

    @model_validator(mode="after")
    def _range(self) -> "PortForward":
        lo, hi = self.port_range
        if not 1 <= lo <= hi <= 65535:
            raise ValueError(f"ports {self.ports!r}: need 1 <= low <= high <= 65535")
        return self

    @property
    def port_range(self) -> tuple[int, int]:
        lo, _, hi = self.ports.partition("-")
        return int(lo), int(hi or lo)

    def covers(self, proto: str, port: int) -> bool:
        lo, hi = self.port_range
        return self.proto == proto and lo <= port <= hi


class Nat(Strict):
    """A router's address translation: source NAT (masquerade) of everything leaving the
    `outside` interface, and port forwards to inside hosts on the outside address."""

    outside: IfName = Field(description="the router's interface towards the outside (masquerade leaves by it)")
    forwards: list[PortForward] = Field(default_factory=list, description="port forwards to inside hosts")


# Role defaults (a1, b1, path1, ...: the shipped racks' names) a host or link stands for (scenarios.base.role_default).
Played = Annotated[str, Field(pattern=_NAME)]
_PLAYS = ("the scenario role defaults this {0} stands for: a scenario whose --client, --link, ... defaults to one of "
          "these names ({1}; `ctl scenarios show NAME` lists them) uses this {0} unless the flag is given")


class Host(Strict):
    role: Role = Field(description="endpoint (sends, receives), bridge (shapes links), router, switch or modem-host")
    os: Literal["linux", "freebsd", "switch-os"] = Field("linux", description="the host's operating system")
    mgmt: Mgmt = Field(description="the management address ctl reaches it on")
    ssh: SSHDefaults | None = Field(None, description="this host's own SSH settings (they win over the inventory's)")
    interfaces: list[Interface] = Field(default_factory=list, description="data interfaces (a bridge's: its ports)")
    shaper: ShaperSpec | None = Field(None, description="a bridge's shaper: kind tc, dnpipe or dummynet")
    snmp: SNMP | None = Field(None, description="the host's SNMP agent, polled during runs")
    modem: Modem | None = Field(None, description="a modem host's modem")
    gps: GPS | None = Field(None, description="a modem host's gpsd")
    uplink: IfName | None = Field(None, description="interface carrying the modem host's uplink")
    nat: Nat | None = Field(None, description="a router's NAT (the virtual rack installs it with nftables)")
    facts: dict[str, str] = Field(default_factory=dict,
                                  description="known host facts a dry run assumes (os_release, sysctls)")
    plays: list[Played] = Field(default_factory=list, description=_PLAYS.format("host", "a1, b1, sa1, ns1, ..."))

    @model_validator(mode="after")
    def _role_fields(self) -> "Host":
        if self.role is Role.BRIDGE and self.shaper is None:
            raise ValueError("a bridge needs a `shaper` (kind: tc, dnpipe or dummynet)")
        if self.role is not Role.BRIDGE and self.shaper is not None:
            raise ValueError("only a bridge has a `shaper`")
        if self.role is Role.MODEM_HOST and self.modem is None:
            raise ValueError("a modem-host needs a `modem`")
        if self.shaper is not None and self.shaper.kind == "dummynet" and self.os != "freebsd":
            raise ValueError("a dummynet shaper runs on os: freebsd")
        if self.shaper is not None and self.shaper.kind in ("tc", "dnpipe") and self.os != "linux":
            raise ValueError(f"a {self.shaper.kind} shaper runs on os: linux")
        names = [i.name for i in self.interfaces]
        if len(names) != len(set(names)):
            raise ValueError("interface names repeat")
        if self.nat is not None:
            if self.role is not Role.ROUTER:
                raise ValueError("only a router has `nat`")
            out = next((i for i in self.interfaces if i.name == self.nat.outside), None)
            if out is None or out.address is None:
                raise ValueError(f"nat.outside: no addressed interface {self.nat.outside!r} on this router")
        return self

    @property
    def gateway(self) -> str | None:
        """The default gateway (of the first interface that names one)."""
        return next((i.gateway for i in self.interfaces if i.gateway), None)


class PipeRef(Strict):
    pipe: int | None = Field(None, ge=1, le=65534, description="the dummynet pipe number of this direction")


class Baseline(Strict):
    """Link state the rack returns to between runs (unlimited when absent). Each value is
    checked at load with the same parser `ctl link set` uses."""

    bw: str | None = Field(None, description="rate of each direction: 20M, 100Mbit/s, 1G (none: unlimited)",
                           json_schema_extra=value_schema(RATE, {"exclusiveMinimum": 0}, nullable=True))
    delay: str | None = Field(None, description="one-way delay of each direction, with a unit: 50ms, 0",
                              json_schema_extra=value_schema(DELAY, {"minimum": 0, "maximum": 0}, nullable=True))
    plr: str | None = Field(None, description="random loss of each direction: a percentage (0.01%) or 1e-4, not 0.01",
                            json_schema_extra=value_schema(PROBABILITY, {"minimum": 0, "maximum": 0}, nullable=True))
    queue: str | None = Field(None, description="queue of each direction: slots (50) or bytes (64KB)",
                              json_schema_extra=value_schema(QUEUE, {"type": "integer", "minimum": 1}, nullable=True))

    @field_validator("bw", "delay", "plr", "queue", mode="before")
    @classmethod
    def _value(cls, v: Any, info: Any) -> Any:
        if v is None:
            return v
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise ValueError(f"{v!r} is not a {info.field_name} value")
        parse = {"bw": parse_rate, "delay": parse_delay_us, "plr": parse_probability, "queue": parse_queue}
        try:
            # A YAML number as plr is refused unless 0 (a fraction or a percent? say `0.01%` or `1e-4`).
            parse[info.field_name](v if info.field_name == "plr" else str(v), what=info.field_name)
        except ParameterError as exc:
            raise ValueError(str(exc).removeprefix(f"{info.field_name}: ")) from None
        return str(v)


class Segment(Strict):
    """A named L2 segment (on the virtual rack: a Linux bridge in its `switch` host).

    Every link side is a segment too: `<link>.a` and `<link>.b` unless the link names a
    named segment as its `a_segment` / `b_segment`. Segments joined by links must form a
    tree: the bridges are dumb two-port forwarders and a loop would circulate frames."""

    switch: str | None = Field(None, description="the switch host carrying it (a key of `hosts`, role switch)")
    description: str = Field("", description="what the segment is, for people")


class Link(Strict):
    """A shaped link: two ports of a bridge joining the segment of side a to the segment of side b.
    Forward is a -> b, reverse b -> a."""

    bridge: str = Field(description="the bridge host (a key of `hosts`, role bridge) that shapes this link")
    a_port: str = Field(description="the bridge's interface facing side a")
    b_port: str = Field(description="the bridge's interface facing side b")
    a_segment: str | None = Field(None, description="named segment on the a side (default: `<link>.a`)")
    b_segment: str | None = Field(None, description="named segment on the b side (default: `<link>.b`)")
    forward: PipeRef = Field(PipeRef(), description="the a -> b direction (dummynet: its pipe)")
    reverse: PipeRef = Field(PipeRef(), description="the b -> a direction (dummynet: its pipe)")
    capacity: str = Field("1G", description="line rate of the link's ports (a rate: 1G, 100M)",
                          json_schema_extra={"pattern": RATE})
    switch: str | None = Field(None, description="the switch host carrying both sides' segments, if any")
    switch_ports: list[str] = Field(default_factory=list, description="the switch's ports of this link (ifName)")
    baseline: Baseline | None = Field(None, description="shaping the link returns to between runs (none: unshaped)")
    plays: list[Played] = Field(default_factory=list, description=_PLAYS.format("link", "path1, sbd1, lp1, ..."))

    @field_validator("capacity")
    @classmethod
    def _capacity(cls, v: str) -> str:
        try:
            parse_rate(v, what="capacity")
        except ParameterError as exc:
            raise ValueError(str(exc)) from None
        return v

    @property
    def capacity_bps(self) -> int:
        return parse_rate(self.capacity)


class InfluxDB(Strict):
    url: str = Field(description="http:// or https:// base URL, without credentials or query",
                     json_schema_extra={"pattern": r"^https?://[^\s@?#]+$"})
    org: str = Field(description="InfluxDB organization")
    bucket: str = Field(description="InfluxDB bucket")
    token: SecretRef = Field(description="where the API token is: {env: NAME} or {file: PATH}, never the token")
    managed: bool = Field(False, description="the virtual rack runs this InfluxDB itself (`ctl lab up`)")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if any(c.isspace() for c in v):
            raise ValueError("a URL holds no spaces or line breaks")
        try:
            u = urlsplit(v)
            u.port        # a port out of range or not a number raises here
        except ValueError as exc:
            raise ValueError(f"not a URL: {exc}") from None
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("an http:// or https:// URL with a host")
        if u.username is not None or u.password is not None or "@" in u.netloc:
            # Credentials in the URL would be copied into run records and logs: the token is a secret reference.
            raise ValueError("credentials in the URL (user:password@) are not allowed: give `token` "
                             "as a secret reference")
        if u.query or u.fragment or "?" in v or "#" in v:
            # InfluxDB's base URL has neither; a `?token=` or `?p=` would be a secret in every record
            raise ValueError("an InfluxDB URL has no query (?...) or fragment (#...): give `token` as a "
                             "secret reference")
        return v


class Virtual(Strict):
    """How `ctl lab up` builds this inventory out of network namespaces."""

    netns_prefix: str = Field(pattern=r"^[a-z][a-z0-9]{1,5}$", description="its namespaces are <prefix>-<host>")
    mgmt_bridge: IfName = Field(description="the management bridge on this machine (an interface name)")
    mgmt_address: str = Field(description="this machine's address on it, with prefix length (10.250.0.1/24)",
                              json_schema_extra={"pattern": CIDR})
    runtime_dir: AbsPath = Field(description="where the rack's keys, sockets and state live while it is up")
    influxdb_port: int = Field(8086, ge=1, le=65535, description="port of the rack's own InfluxDB")
    bastion: str | None = Field(None, json_schema_extra={"pattern": IP}, description=(
        "management address of a jump host the virtual rack builds (namespace <prefix>-bastion, sshd "
        "only); hosts whose ssh names a proxy_jump refuse SSH from the controller's address"))

    @field_validator("mgmt_address")
    @classmethod
    def _cidr(cls, v: str) -> str:
        try:
            ipaddress.ip_interface(v)
        except ValueError:
            raise ValueError(f"{v!r} is not an address with prefix length") from None
        return v

    @model_validator(mode="after")
    def _bastion(self) -> "Virtual":
        if self.bastion is not None:
            net = ipaddress.ip_interface(self.mgmt_address)
            try:
                addr = ipaddress.ip_address(self.bastion)
            except ValueError:
                raise ValueError(f"bastion {self.bastion!r} is not an IP address") from None
            if addr not in net.network or addr == net.ip:
                raise ValueError(f"bastion {addr} is not another address of the management network {net.network}")
        return self


class Inventory(Strict):
    """A rack: its hosts, the links its bridges shape, how ctl reaches them (ctl inventory check FILE)."""

    version: Literal[1] = Field(description="format version of this file: 1")
    name: str = Field(pattern=_NAME, description="the rack's name (its lock, lease and run records are keyed by it)")
    kind: Literal["virtual", "physical"] = Field(description="physical, or virtual (namespaces `ctl lab up` builds)")
    description: str = Field("", description="what the rack is, for people")
    group: str | None = Field(None, pattern=_NAME, description=(
        "the rack group this rack belongs to: a campaign naming `rack_group` runs on every rack of the group"))
    ssh: SSHDefaults = Field(SSHDefaults(), description="SSH settings of every host (a host's own `ssh` wins)")
    virtual: Virtual | None = Field(None, description="kind virtual: how `ctl lab up` builds the rack")
    influxdb: InfluxDB | None = Field(None, description="where run telemetry goes (optional)")
    hosts: dict[str, Host] = Field(description="the rack's machines by name (lower-case letters, digits, '-')")
    links: dict[str, Link] = Field(default_factory=dict, description="the shaped links by name")
    segments: dict[str, Segment] = Field(default_factory=dict, description="named L2 segments (switch VLANs)")
    _source: Path | None = PrivateAttr(None)

    @field_validator("hosts", "links", "segments")
    @classmethod
    def _names(cls, v: dict) -> dict:
        for name in v:
            if not re.fullmatch(_NAME, name):
                raise ValueError(f"name {name!r} must match {_NAME}")
        return v

    @model_validator(mode="after")
    def _cross(self) -> "Inventory":
        if self.kind == "virtual" and self.virtual is None:
            raise ValueError("a virtual inventory needs a `virtual` section")
        if self.kind == "physical" and self.virtual is not None:
            raise ValueError("a physical inventory has no `virtual` section")
        used_ports: dict[tuple[str, str], str] = {}
        for lname, link in self.links.items():
            bridge = self.hosts.get(link.bridge)
            if bridge is None:
                raise ValueError(f"link {lname}: bridge {link.bridge!r} is not a host")
            if bridge.role is not Role.BRIDGE:
                raise ValueError(f"link {lname}: host {link.bridge!r} is not a bridge")
            ports = {i.name for i in bridge.interfaces}
            if link.a_port == link.b_port:
                raise ValueError(f"link {lname}: a_port and b_port are both {link.a_port!r} (a link joins two ports)")
            for port in (link.a_port, link.b_port):
                if port not in ports:
                    raise ValueError(f"link {lname}: bridge {link.bridge} has no interface {port!r}")
                other = used_ports.get((link.bridge, port))
                if other is not None:
                    raise ValueError(f"link {lname}: port {port} of bridge {link.bridge} is already a port of "
                                     f"link {other}")
                used_ports[(link.bridge, port)] = lname
            if bridge.shaper and bridge.shaper.kind == "dummynet":
                for d in ("forward", "reverse"):
                    if getattr(link, d).pipe is None:
                        raise ValueError(f"link {lname}: a dummynet link needs {d}.pipe")
                if link.forward.pipe == link.reverse.pipe:
                    raise ValueError(f"link {lname}: one pipe per direction (forward and reverse share "
                                     f"pipe {link.forward.pipe})")
            if link.switch is not None and link.switch not in self.hosts:
                raise ValueError(f"link {lname}: switch {link.switch!r} is not a host")
        for sname, seg in self.segments.items():
            if seg.switch is not None and (seg.switch not in self.hosts
                                           or self.hosts[seg.switch].role is not Role.SWITCH):
                raise ValueError(f"segment {sname}: switch {seg.switch!r} is not a switch host")
        for lname, link in self.links.items():
            for side in ("a", "b"):
                named = getattr(link, f"{side}_segment")
                if named is not None and named not in self.segments:
                    raise ValueError(f"link {lname}: {side}_segment {named!r} is not a named segment "
                                     f"(segments: {', '.join(sorted(self.segments)) or 'none'})")
        self._check_tree()
        self._check_addresses()
        for hname, host in self.hosts.items():
            for iface in host.interfaces:
                if iface.link is not None and iface.link not in self.links:
                    raise ValueError(f"host {hname}: interface {iface.name} names unknown link {iface.link!r}")
                if iface.segment is not None and iface.segment not in self.segments:
                    raise ValueError(f"host {hname}: interface {iface.name} names unknown segment "
                                     f"{iface.segment!r}")
            if len([i for i in host.interfaces if i.gateway]) > 1:
                raise ValueError(f"host {hname}: more than one interface names a `gateway` (one default route)")
            if host.role is not Role.SWITCH:
                ssh = self.ssh_for(hname)
                if ssh is None:
                    raise ValueError(f"host {hname}: no SSH known_hosts, or no key_file, agent or config_file to log in with "
                                     "(set them under `ssh`)")
        pipes: dict[tuple[str, int], str] = {}
        for lname, link in self.links.items():
            for d in ("forward", "reverse"):
                p = getattr(link, d).pipe
                if p is None:
                    continue
                key = (link.bridge, p)
                if key in pipes:
                    raise ValueError(f"link {lname}: pipe {p} on {link.bridge} is already used by {pipes[key]}")
                pipes[key] = f"{lname}.{d}"
        return self

    def _check_addresses(self) -> None:
        """No two hosts share an address, management or data, in any spelling (`::ffff:10.0.0.1`
        is 10.0.0.1; host names compare without case), and no host has one address twice on
        data interfaces. A host may use its management address on a data interface too."""
        seen: dict[str, tuple[str, str, bool]] = {}    # address -> (host, "host's <use>", is management)
        uses = [(h, host.mgmt.address, f"management address {host.mgmt.address}", f"host {h}'s management address",
                 True)
                for h, host in self.hosts.items()]
        uses += [(h, i.ip, f"address {i.ip} of {i.name}", f"{h} {i.name}'s", False)
                 for h, host in self.hosts.items() for i in host.interfaces if i.ip is not None]
        for host, address, what, whose, mgmt in uses:
            k = _address_key(address)
            if k in seen and (seen[k][0] != host or (not mgmt and not seen[k][2])):
                raise ValueError(f"host {host}: {what} is also {seen[k][1]}")
            seen.setdefault(k, (host, whose, mgmt))

    def _check_tree(self) -> None:
        """Links join segments; a second path between two segments would be a forwarding loop."""
        parent: dict[str, str] = {}

        def root(x: str) -> str:
            while parent.setdefault(x, x) != x:
                x = parent[x]
            return x
        for lname, link in self.links.items():
            a, b = self.link_segment(lname, "a"), self.link_segment(lname, "b")
            if a == b:
                raise ValueError(f"link {lname}: both sides are segment {a}")
            ra, rb = root(a), root(b)
            if ra == rb:
                raise ValueError(f"link {lname}: segments {a} and {b} are already joined by other links "
                                 "(segments must form a tree: a loop would circulate frames)")
            parent[ra] = rb

    # ---- queries -------------------------------------------------------------------------

    def link_segment(self, link: str, side: str) -> str:
        """The L2 segment on one side of a link: its named segment, or `<link>.<side>`."""
        named = getattr(self.links[link], f"{side}_segment")
        return named if named is not None else f"{link}.{side}"

    def segment_of(self, iface: Interface) -> str | None:
        if iface.segment is not None:
            return iface.segment
        if iface.link is not None and iface.side is not None:
            return self.link_segment(iface.link, iface.side)
        return None

    def segment_switch(self, segment: str) -> str | None:
        """The switch host holding a segment (a link side's: the link's `switch`)."""
        if segment in self.segments:
            return self.segments[segment].switch
        link, _, _side = segment.rpartition(".")
        return self.links[link].switch if link in self.links else None

    def all_segments(self) -> list[str]:
        """Every segment: each link's two sides, then the named segments nothing links."""
        out: list[str] = []
        for lname in sorted(self.links):
            for side in ("a", "b"):
                s = self.link_segment(lname, side)
                if s not in out:
                    out.append(s)
        out += [s for s in sorted(self.segments) if s not in out]
        return out

    def interfaces_on_segment(self, segment: str) -> list[tuple[str, Interface]]:
        return [(h, i) for h, host in sorted(self.hosts.items()) for i in host.interfaces
                if self.segment_of(i) == segment]

    def address_of(self, host: str, iface: str) -> str | None:
        for i in self.hosts[host].interfaces:
            if i.name == iface:
                return i.ip
        return None


    def ssh_for(self, host: str) -> SSH | None:
        """The host's SSH settings (None: no known_hosts, or no key, agent or ssh config to log in with)."""
        h = self.hosts[host]
        merged: dict[str, Any] = dict(self.ssh)
        explicit = set(self.ssh.model_fields_set)
        if h.ssh is not None:
            merged.update({k: v for k, v in h.ssh if k in h.ssh.model_fields_set})
            explicit |= h.ssh.model_fields_set
        if merged.get("known_hosts") is None or not (merged.get("key_file") or merged.get("agent")
                                                     or merged.get("config_file")):
            return None
        return SSH(**merged, explicit=frozenset(explicit))

    def by_role(self, role: Role) -> list[str]:
        return sorted(n for n, h in self.hosts.items() if h.role is role)

    def interface_on(self, host: str, link: str) -> Interface:
        for iface in self.hosts[host].interfaces:
            if iface.link == link:
                return iface
        raise InventoryError(f"host {host} has no interface on link {link}")

    def hosts_on(self, link: str, side: str) -> list[str]:
        return sorted(n for n, h in self.hosts.items() if any(i.link == link and i.side == side
                                                                for i in h.interfaces))

    def link_of_address(self, address: str) -> str | None:
        try:
            ip = ipaddress.ip_address(address.split("%")[0])
        except ValueError:
            return None
        if ip.version == 6 and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        for host in self.hosts.values():
            for iface in host.interfaces:
                if iface.link and iface.address and ipaddress.ip_interface(iface.address).ip == ip:
                    return iface.link
        return None

    def snapshot(self) -> dict:
        """The inventory as recorded in a run record: references only, no secret values."""
        return self.model_dump(mode="json")


def _address_key(address: str) -> str:
    """One spelling per address: IPv4-mapped IPv6 as IPv4, a host name in lower case."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address.lower().rstrip(".")
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def format_validation_error(path: Path, exc: ValidationError, lines: dict[tuple, int], root: Any = None,
                            hint: str = "") -> str:
    """The first error of a file in ctl's words (controller.modelerrors), and how many more there are."""
    return format_first(path, exc, lines, root, more_hint=hint)


def load_inventory(path: str | Path) -> Inventory:
    p = Path(path)
    data, lines = load_yaml_with_lines(p)
    if not isinstance(data, dict):
        raise InventoryError(f"{p}:1: the inventory must be a mapping")
    try:
        inv = Inventory.model_validate(data)
    except ValidationError as exc:
        raise InventoryError(format_validation_error(p, exc, lines, Inventory,
                                                     f"; `ctl inventory check {p}` lists every one")) from None
    inv._source = p
    return inv


DEFAULT_INVENTORY = packaged_inventory()


def resolve_inventory_path(flag: str | None) -> Path:
    """CLI flag > $CTL_INVENTORY > config file > the shipped virtual rack (controller.settings)."""
    if flag is not None and not flag:
        raise InventoryError("--inventory: empty path")
    return existing_or_shipped("inventory", resolve_setting("inventory", flag).value)


def source_of(inv: Inventory) -> Path | None:
    return inv._source
