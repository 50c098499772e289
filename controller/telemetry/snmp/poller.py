"""The SNMP poller (asyncio, pysnmp 7): polls many agents concurrently, one request per agent
per round, and hands `Point`s and `Event`s to a sink (see the package docstring)."""
from __future__ import annotations

import asyncio
import importlib
import hashlib
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from controller.errors import ParameterError
from controller.telemetry.snmp.counters import COUNTERS, CounterSample, CounterTracker, Event, EventKind, IF_COUNTER_DISCONTINUITY, IF_HC_IN_OCTETS, IF_HIGH_SPEED, IF_NAME, MEASUREMENT, NET_SNMP, least_elapsed_cs, restart_suspected, Output, Point, RATE_FIELDS, RefreshModel, SYS_UPTIME, Sink

log = logging.getLogger(__name__)

# ---- OIDs (numeric: Debian ships no MIB files) ---------------------------------------------


# ---- counter tracking (pure) ---------------------------------------------------------------


# ---- plain output records ------------------------------------------------------------------


# ---- the poller ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AgentConfig:
    """One agent to poll: inventory host name, address, the inventory's SNMP section.

    `snmp` is controller.inventory.SNMP: secrets are SecretRef references, resolved by
    SnmpPoller.start(). `refresh` describes the agent's counter cache (net-snmp default;
    from_inventory takes it from the inventory's `refresh_s` / `refresh_periodic`).
    """

    host: str
    address: str
    snmp: Any
    refresh: RefreshModel = NET_SNMP


class Reply(NamedTuple):
    """One GET's answer: {oid: pysnmp value}, receipt wall and monotonic ns, sending monotonic ns."""
    values: dict[str, Any]
    recv_ns: int
    mono_ns: int
    sent_mono_ns: int


class SnmpAgentError(Exception):
    def __init__(self, message: str, *, timeout: bool = False):
        super().__init__(message)
        self.timeout = timeout


@dataclass
class _Row:
    ifindex: int
    ifname: str


@dataclass
class _AgentState:
    cfg: AgentConfig
    engine: Any = None      # the poller's shared SnmpEngine, once this agent's transport is open
    target: Any = None
    domain: tuple[int, ...] | None = None   # this agent's own UDP transport domain (own socket)
    auth: Any = None
    rows: list[_Row] = field(default_factory=list)
    discovered: bool = False
    trackers: dict[tuple[int, str], CounterTracker] = field(default_factory=dict)
    # (rows of the request, oid) -> last raw value: refresh evidence compares reads made by the
    # same request slot, so a reload between two concurrent requests is never "old news".
    prev_values: dict[tuple[tuple[int, ...], str], int] = field(default_factory=dict)
    all_ifindexes: list[int] = field(default_factory=list)      # every row of the agent's ifName table
    last_change: dict[int, int] = field(default_factory=dict)   # ifIndex -> mono ns its in-octets last moved
    last_uptime_cs: int | None = None
    last_mono_ns: int | None = None
    failures: int = 0
    reported_missing: frozenset[str] = frozenset()
    reported_partial: set[tuple[int, tuple[str, ...]]] = field(default_factory=set)
    reported_dup: frozenset[str] = frozenset()
    discovered_mono: float = 0.0
    max_varbinds: int = 0       # per agent: halved when the agent answers tooBig
    refresh: RefreshModel | None = None   # the model in use when the declared one proved wrong


def _auth_protocols() -> tuple[dict[str, Any], dict[str, Any]]:
    from pysnmp.hlapi.v3arch import asyncio as h
    auth = {"md5": h.USM_AUTH_HMAC96_MD5, "sha": h.USM_AUTH_HMAC96_SHA,
            "sha224": h.USM_AUTH_HMAC128_SHA224, "sha256": h.USM_AUTH_HMAC192_SHA256,
            "sha384": h.USM_AUTH_HMAC256_SHA384, "sha512": h.USM_AUTH_HMAC384_SHA512}
    # net-snmp's AES-192/AES-256 use the Blumenthal key extension (its AES192C/AES256C
    # would be pysnmp's plain CFB192/256 "Cisco" variants).
    priv = {"des": h.USM_PRIV_CBC56_DES, "aes": h.USM_PRIV_CFB128_AES,
            "aes192": h.USM_PRIV_CFB192_AES_BLUMENTHAL, "aes256": h.USM_PRIV_CFB256_AES_BLUMENTHAL}
    return auth, priv


class SnmpPoller:
    """Poll IF-MIB counters of many agents concurrently (pysnmp 7, asyncio).

    SnmpPoller(agents, sink=None, *, interval_s=1.0, max_varbinds=40, canaries=4)
      agents: AgentConfig list (or use SnmpPoller.from_inventory(inv, ...)).
      sink: a callable taking one Point/Event (sync or async) or an asyncio.Queue; every
        output of every round is delivered to it in order. poll_once() also returns them.
      interval_s: round period used by run().
      max_varbinds: varbinds per GET request (4 interfaces + sysUpTime + canaries by default;
        an agent that answers tooBig gets its requests halved).
      canaries: how many extra interfaces' ifHCInOctets to read in each request as evidence
        that the agent reloaded its cache (our own request packets move the counters of the
        interface they arrive on, so some counter in the agent changes at every reload).
      rediscover_s: re-walk ifName this often (new interfaces, renumbering without restart);
        every 30 s while some of the inventory's `interfaces` are missing. 0 = never.

    Lifecycle: `await start()` (resolves secrets, opens one UDP transport per agent on a
    shared SnmpEngine, discovers ifIndex->ifName), then `await poll_once()` or
    `await run(stop_event)`, then `await close()`. Also `async with SnmpPoller(...) as p:`.
    """

    def __init__(self, agents: Sequence[AgentConfig], sink: Sink | None = None, *,
                 interval_s: float = 1.0, max_varbinds: int = 40, canaries: int = 4,
                 rediscover_s: float = 300.0) -> None:
        if interval_s <= 0:
            raise ParameterError("SNMP poll interval must be > 0")
        if max_varbinds < len(COUNTERS) + 4:
            raise ParameterError(f"max_varbinds must be at least {len(COUNTERS) + 4}")
        hosts = [a.host for a in agents]
        if len(hosts) != len(set(hosts)):
            raise ParameterError("SNMP agents: host names repeat")
        self.interval_s = interval_s
        self.max_varbinds = max_varbinds
        self.canary_count = max(0, canaries)
        self.rediscover_s = rediscover_s
        self._sink = sink
        self._agents = {a.host: _AgentState(a, max_varbinds=max_varbinds) for a in agents}
        self._started = False
        # [(engine, {v3 user: fingerprint of its keys})]: usually one engine for everybody
        self._engines: list[tuple[Any, dict[str, str]]] = []
        self._spare_engine: Any = None       # built in a thread by start(): the first engine needed
        self._next_domain = 1
        # oid -> ObjectType already resolved against pysnmp's MIB view. pysnmp resolves every
        # varbind of every request through its MIB view unless the ObjectType is already
        # resolved; that lookup was ~40% of a round's CPU (profiled), so resolve each OID once.
        self._objtypes: dict[str, Any] = {}

    @property
    def agents(self) -> list[AgentConfig]:
        """The agents polled, in the order given."""
        return [st.cfg for st in self._agents.values()]

    @classmethod
    def from_inventory(cls, inv: Any, sink: Sink | None = None, *, hosts: Iterable[str] | None = None,
                       refresh: RefreshModel | None = None, **kwargs: Any) -> "SnmpPoller":
        """Every inventory host with an `snmp` section (or just `hosts`), at host.mgmt.address.

        Each agent's counter cache model is the one its `snmp` section declares (`refresh_s`,
        `refresh_periodic`); `refresh` overrides it for every agent."""
        names = sorted(hosts) if hosts is not None else sorted(n for n, h in inv.hosts.items() if h.snmp)
        agents = []
        for name in names:
            h = inv.hosts[name]
            if h.snmp is None:
                raise ParameterError(f"host {name} has no `snmp` section in the inventory")
            agents.append(AgentConfig(name, h.mgmt.address, h.snmp,
                                      refresh if refresh is not None else RefreshModel.from_snmp(h.snmp)))
        return cls(agents, sink, **kwargs)

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> "SnmpPoller":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> list[Output]:
        """Resolve credentials, open one transport per agent, discover interfaces.

        Returns (and delivers) the discovery events.

        Credential problems raise ParameterError (naming the host and the reference, never
        the value). Unreachable agents do not: they produce events and are retried each round.

        pysnmp's import (0.2-0.3 s; a run preloads it in a thread, which an import here would
        wait for while holding the event loop) and its first engine (MIB modules compiled, ~0.05 s
        of CPU, more on a loaded controller) are done in a thread: the event loop runs the other
        hosts' start meanwhile (a controller's event loop stalled 0.29 s here, measured with
        asyncio's debug mode).
        """
        await asyncio.to_thread(importlib.import_module, "pysnmp.hlapi.v3arch.asyncio")
        from pysnmp.hlapi.v3arch import asyncio as h
        if not self._engines and self._spare_engine is None:
            self._spare_engine = await asyncio.to_thread(h.SnmpEngine)
        auth_p, priv_p = _auth_protocols()
        for st in self._agents.values():
            snmp = st.cfg.snmp
            what = f"host {st.cfg.host} snmp"
            if snmp.version == "2c":
                st.auth = h.CommunityData(snmp.community.resolve(f"{what}.community"), mpModel=1)
            else:
                st.auth = h.UsmUserData(
                    snmp.user,
                    authKey=snmp.auth_key.resolve(f"{what}.auth_key"),
                    privKey=snmp.priv_key.resolve(f"{what}.priv_key"),
                    authProtocol=auth_p[snmp.auth_protocol],
                    privProtocol=priv_p[snmp.priv_protocol])
        self._started = True
        out: list[Output] = []
        results = await asyncio.gather(*(self._guarded(st, self._discover_only) for st in self._agents.values()))
        for r in results:
            out.extend(r)
        await self._deliver(out)
        return out

    async def _open(self, st: _AgentState) -> None:
        """Give the agent its own UDP transport (socket) on the shared engine.

        One SnmpEngine for all agents: pysnmp compiles its MIB modules from source for every
        engine (~0.1 s of CPU each, measured), which would block the event loop for seconds
        with 50 agents. pysnmp keeps one socket per transport *domain*, so each agent gets a
        domain of its own (UDP domain OID + a sequence number): its own socket and source port,
        and its own v3 engine-ID discovery cache entry (keyed by domain and address).
        """
        from pysnmp.carrier.asyncio.dgram import udp
        from pysnmp.hlapi.v3arch import asyncio as h
        engine = self._engine_for(st)
        domain = udp.DOMAIN_NAME + (self._next_domain,)
        self._next_domain += 1
        target_cls = type("AgentUdpTransportTarget", (h.UdpTransportTarget,), {"TRANSPORT_DOMAIN": domain})
        st.target = await target_cls.create(
            (st.cfg.address, st.cfg.snmp.port), timeout=st.cfg.snmp.timeout, retries=st.cfg.snmp.retries)
        st.domain = domain
        st.engine = engine

    def _engine_for(self, st: _AgentState) -> Any:
        """The shared engine, unless this agent's v3 user name is already configured there
        with other keys: pysnmp keys USM users by name, so such an agent needs its own."""
        from pysnmp.hlapi.v3arch import asyncio as h
        user, fp = None, ""
        if st.cfg.snmp.version == "3":
            user = st.cfg.snmp.user
            a = st.auth
            fp = hashlib.sha256(repr((a.authentication_protocol, a.authentication_key, a.privacy_protocol,
                                      a.privacy_key)).encode()).hexdigest()
        for engine, users in self._engines:
            if user is None or users.get(user, fp) == fp:
                if user is not None:
                    users[user] = fp
                return engine
        engine, self._spare_engine = (self._spare_engine or h.SnmpEngine()), None
        self._engines.append((engine, {user: fp} if user is not None else {}))
        return engine

    async def _reopen(self, st: _AgentState) -> None:
        """New socket and domain: forgets the agent's v3 engine ID/boots (reinstalled agent)."""
        self._close_transport(st)
        try:
            await self._open(st)
        except Exception as exc:
            log.warning("SNMP %s: cannot reopen transport: %s", st.cfg.host, exc)

    def _close_transport(self, st: _AgentState) -> None:
        if st.domain is not None and st.engine is not None:
            from pysnmp.entity import config
            try:
                transport = config.get_transport(st.engine, st.domain)
                if transport is not None:
                    config.delete_transport(st.engine, st.domain)
                    transport.close_transport()
            except Exception:  # closing must not mask what made us close
                log.debug("closing the SNMP transport of %s failed", st.cfg.host, exc_info=True)
        st.domain = st.engine = st.target = None

    async def close(self) -> None:
        for st in self._agents.values():
            self._close_transport(st)
        for engine, _ in self._engines:
            try:
                engine.close_dispatcher()
            except Exception:
                log.debug("closing the SNMP engine failed", exc_info=True)
        self._engines = []
        self._started = False

    # -- public queries -------------------------------------------------------------------

    @property
    def hosts(self) -> list[str]:
        return list(self._agents)

    def interfaces(self, host: str) -> dict[int, str]:
        """ifIndex -> ifName being polled on `host` (after discovery)."""
        return {r.ifindex: r.ifname for r in self._agents[host].rows}

    # -- rounds ---------------------------------------------------------------------------

    def _deadline(self, st: _AgentState, requests: int) -> float:
        """Per-agent wall-clock budget: pysnmp's own timeout x tries x sequential requests."""
        snmp = st.cfg.snmp
        return snmp.timeout * (snmp.retries + 1) * max(1, requests) + 0.5

    async def poll_once(self) -> list[Output]:
        """One round over all agents, concurrently; a dead agent costs only its own timeout."""
        if not self._started:
            raise RuntimeError("SnmpPoller.start() first")
        results = await asyncio.gather(*(self._guarded(st, self._poll_agent) for st in self._agents.values()))
        out = [o for r in results for o in r]
        await self._deliver(out)
        return out

    async def run(self, stop: asyncio.Event | None = None, *, rounds: int | None = None) -> None:
        """Poll every `interval_s` on a fixed schedule until `stop` is set (or `rounds` done).

        A round that overruns skips the slots it missed rather than bursting to catch up.
        """
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        start = loop.time()
        slot = done = 0
        while not stop.is_set() and (rounds is None or done < rounds):
            await self.poll_once()
            done += 1
            now = loop.time()
            # next slot strictly in the future: an overrun skips slots instead of bursting
            slot = max(slot + 1, math.floor((now - start) / self.interval_s) + 1)
            delay = start + slot * self.interval_s - now
            if delay > 0:
                try:
                    await asyncio.wait_for(stop.wait(), timeout=delay)
                except asyncio.TimeoutError:
                    pass

    async def _deliver(self, out: list[Output]) -> None:
        if self._sink is None:
            return
        for item in out:
            if isinstance(self._sink, asyncio.Queue):
                await self._sink.put(item)
            else:
                r = self._sink(item)
                if inspect.isawaitable(r):
                    await r

    async def _guarded(self, st: _AgentState,
                       fn: Callable[[_AgentState, list[Output]], Awaitable[None]]) -> list[Output]:
        """Run one agent's work under its own deadline; failures become events, never zeros.

        `fn` appends to `out` as it goes, so events produced before a failure (an
        agent_restart seen just before the agent stopped answering) are not lost.
        The deadline is only a safety net: pysnmp's own timeout x retries ends a request
        to a dead agent first, and the other agents' requests run concurrently anyway.
        """
        out: list[Output] = []
        # a round: GETs, plus on restart a rediscovery walk and GETs again; discovery pages
        requests = 3 + (0 if st.discovered else 6)
        try:
            await asyncio.wait_for(fn(st, out), timeout=self._deadline(st, requests))
        except (asyncio.TimeoutError, SnmpAgentError) as exc:
            timeout = isinstance(exc, asyncio.TimeoutError) or getattr(exc, "timeout", False)
            st.failures += 1
            msg = (f"no answer from {st.cfg.address}:{st.cfg.snmp.port} within "
                   f"{st.cfg.snmp.timeout:g} s x {st.cfg.snmp.retries + 1} tries"
                   if timeout else f"{st.cfg.address}:{st.cfg.snmp.port}: {exc}")
            kind: EventKind = "agent_unreachable" if timeout else "agent_error"
            log.warning("SNMP %s: %s (%d consecutive)", st.cfg.host, msg, st.failures)
            if st.cfg.snmp.version == "3" and (not timeout or st.failures >= 2):
                # USM state (engine ID, boots/time) is stale after an agent was reinstalled
                # (new engine ID): pysnmp then times out forever instead of rediscovering
                # (measured). A new transport domain makes it rediscover on the next round.
                await self._reopen(st)
            return out + [Event(kind, st.cfg.host, time.time_ns(), f"{msg} ({st.failures} consecutive)")]
        except Exception as exc:  # a pysnmp bug or an unexpected answer: report, keep polling others
            st.failures += 1
            log.exception("SNMP %s: unexpected error", st.cfg.host)
            return out + [Event("agent_error", st.cfg.host, time.time_ns(),
                                f"unexpected {type(exc).__name__}: {exc} ({st.failures} consecutive)")]
        if st.failures and any(isinstance(o, Point) for o in out):
            out.insert(0, Event("agent_recovered", st.cfg.host, time.time_ns(),
                                f"answering again after {st.failures} failed round(s)"))
            st.failures = 0
        return out

    # -- SNMP operations ------------------------------------------------------------------

    async def _get(self, st: _AgentState, oids: Sequence[str]) -> Reply:
        """GET `oids` in one request -> Reply (values, receipt and sending times)."""
        from pysnmp.hlapi.v3arch import asyncio as h
        sent_mono = time.monotonic_ns()
        objtypes = []
        for o in oids:
            ot = self._objtypes.get(o)
            if ot is None:
                ot = self._objtypes[o] = h.ObjectType(h.ObjectIdentity(o))
            objtypes.append(ot)
        err_ind, err_status, err_index, vbs = await h.get_cmd(
            st.engine, st.auth, st.target, h.ContextData(), *objtypes, lookupMib=False)
        recv_ns, mono_ns = time.time_ns(), time.monotonic_ns()
        if not err_ind and err_status and int(err_status) == 1:      # tooBig
            # The answer does not fit the agent's message size: smaller requests next round.
            before = st.max_varbinds or self.max_varbinds
            st.max_varbinds = max(len(COUNTERS) + 3, before // 2)
            raise SnmpAgentError(f"agent answered tooBig for {len(oids)} varbinds: "
                                 f"requests reduced to {st.max_varbinds} varbinds")
        self._check(err_ind, err_status, err_index, oids)
        return Reply({str(name): val for name, val in vbs}, recv_ns, mono_ns, sent_mono)

    @staticmethod
    def _check(err_ind: Any, err_status: Any, err_index: Any, oids: Sequence[str]) -> None:
        from pysnmp.proto import errind
        if err_ind:
            raise SnmpAgentError(str(err_ind), timeout=isinstance(err_ind, errind.RequestTimedOut))
        if err_status:
            idx = int(err_index) if err_index else 0
            where = f" at {oids[idx - 1]}" if 0 < idx <= len(oids) else ""
            raise SnmpAgentError(f"agent answered {err_status.prettyPrint()}{where}")

    async def _walk(self, st: _AgentState, column: str, max_rows: int = 10_000) -> list[tuple[int, Any]]:
        """GETBULK walk of one table column -> [(ifIndex, value)]; stops at the column's end.

        pysnmp's bulk_walk_cmd is not used: it restarts from the last OID on timeouts and
        has no bound; here every page is one request under the caller's deadline.
        """
        from pysnmp.hlapi.v3arch import asyncio as h
        from pysnmp.proto.rfc1905 import EndOfMibView, NoSuchInstance, NoSuchObject
        prefix = tuple(int(x) for x in column.split("."))
        rows: list[tuple[int, Any]] = []
        cursor = column
        while len(rows) < max_rows:
            err_ind, err_status, err_index, vbs = await h.bulk_cmd(
                st.engine, st.auth, st.target, h.ContextData(), 0, 25,
                h.ObjectType(h.ObjectIdentity(cursor)), lookupMib=False)
            self._check(err_ind, err_status, err_index, [cursor])
            if not vbs:
                break
            for name, val in vbs:
                oid = name.asTuple()
                if isinstance(val, (EndOfMibView, NoSuchObject, NoSuchInstance)) or oid[:len(prefix)] != prefix \
                        or len(oid) != len(prefix) + 1:
                    return rows
                rows.append((oid[-1], val))
                cursor = str(name)
        return rows

    # -- discovery ------------------------------------------------------------------------

    async def _discover_only(self, st: _AgentState, out: list[Output]) -> None:
        if st.engine is None:
            await self._open(st)
        out += await self._discover(st)

    async def _discover(self, st: _AgentState) -> list[Output]:
        """ifIndex -> ifName (walk of ifName), filtered by the inventory's `interfaces`."""
        names = [(idx, bytes(v.asOctets()).decode("utf-8", "replace")) for idx, v in await self._walk(st, IF_NAME)]
        now = time.time_ns()
        out: list[Output] = []
        if not names:
            st.rows, st.discovered = [], False
            return [Event("agent_error", st.cfg.host, now,
                          "ifName (1.3.6.1.2.1.31.1.1.1.1) walk returned nothing: IF-MIB not visible "
                          "(the agent's view? Debian's default view is system-only) or not SNMPv2c/v3")]
        wanted = list(st.cfg.snmp.interfaces)
        by_name: dict[str, list[int]] = {}
        for idx, name in names:
            by_name.setdefault(name, []).append(idx)
        if wanted:
            rows = [_Row(idx, n) for n in wanted for idx in by_name.get(n, [])]
            missing = frozenset(n for n in wanted if n not in by_name)
            if missing and missing != st.reported_missing:
                out.append(Event("interface_missing", st.cfg.host, now,
                                 f"interfaces {sorted(missing)} not in the agent's ifName table "
                                 f"(has {sorted(by_name)})"))
            st.reported_missing = missing
        else:
            rows = [_Row(idx, n) for idx, n in names]
        dup = frozenset(n for n, idxs in by_name.items() if len(idxs) > 1 and (not wanted or n in wanted))
        if dup and dup != st.reported_dup:
            out.append(Event("agent_error", st.cfg.host, now,
                             f"ifName not unique for {sorted(dup)}: each row is polled, tagged by ifindex"))
        st.reported_dup = dup
        old = {r.ifindex: r.ifname for r in st.rows}
        for r in rows:
            if r.ifindex in old and old[r.ifindex] != r.ifname:
                # the same ifIndex now names another interface: its counters are not a continuation
                st.trackers = {k: t for k, t in st.trackers.items() if k[0] != r.ifindex}
                out.append(Event("discontinuity", st.cfg.host, now,
                                 f"ifIndex {r.ifindex} was {old[r.ifindex]!r}, now {r.ifname!r}: new baseline",
                                 r.ifname, r.ifindex, tuple(COUNTERS)))
        polled = {r.ifindex for r in rows}
        st.rows = sorted(rows, key=lambda r: r.ifindex)
        st.all_ifindexes = [idx for idx, _ in names]
        st.trackers = {k: t for k, t in st.trackers.items() if k[0] in polled}
        st.prev_values.clear()       # request slots change with the rows
        st.discovered = True
        st.discovered_mono = time.monotonic()
        log.info("SNMP %s: polling %s", st.cfg.host, ", ".join(f"{r.ifname}({r.ifindex})" for r in st.rows))
        return out

    def _batches(self, st: _AgentState) -> list[tuple[list[_Row], list[str]]]:
        """Rows split into GET requests; each carries sysUpTime and up to `canaries` canary OIDs.

        Canaries are the in-octets of other interfaces, those that moved most recently first
        (the management interface, which our own requests keep moving, soon leads): one of
        them changing proves the agent reloaded its cache, which turns "unchanged" counters
        in the same request into genuine zeros.
        """
        per_row = len(COUNTERS) + 2
        limit = st.max_varbinds or self.max_varbinds
        ncan = min(self.canary_count, max(0, limit - 1 - per_row))
        room = max(1, (limit - 1 - ncan) // per_row)
        order = sorted(st.all_ifindexes, key=lambda i: -st.last_change.get(i, 0))
        out = []
        for i in range(0, len(st.rows), room):
            rows = st.rows[i:i + room]
            mine = {r.ifindex for r in rows}
            oids = [SYS_UPTIME]
            for r in rows:
                oids += [f"{col}.{r.ifindex}" for col, _, _ in COUNTERS.values()]
                oids += [f"{IF_HIGH_SPEED}.{r.ifindex}", f"{IF_COUNTER_DISCONTINUITY}.{r.ifindex}"]
            oids += [f"{IF_HC_IN_OCTETS}.{c}" for c in [c for c in order if c not in mine][:ncan]]
            out.append((rows, oids))
        return out

    # -- one agent, one round -------------------------------------------------------------

    async def _poll_agent(self, st: _AgentState, out: list[Output]) -> None:
        if st.engine is None:
            await self._open(st)
        due = 30.0 if st.reported_missing else self.rediscover_s
        if not st.discovered or (self.rediscover_s and time.monotonic() - st.discovered_mono > due):
            out += await self._discover(st)
            if not st.discovered:
                return
        batches = self._batches(st)
        replies = await asyncio.gather(*(self._get(st, oids) for _, oids in batches))

        restart = self._restart_reason(st, replies)
        if restart is not None:
            now = replies[0].recv_ns
            out.append(Event("agent_restart", st.cfg.host, now, restart))
            for r in st.rows:
                out.append(Event("discontinuity", st.cfg.host, now, f"{restart}: new baseline, no rate",
                                 ifname=r.ifname, ifindex=r.ifindex, counters=tuple(COUNTERS)))
            # ifIndexes may be renumbered by a restart (switches do): rediscover, then take
            # this round's values again as the new baselines.
            st.trackers.clear()
            st.prev_values.clear()
            st.discovered = False
            out += await self._discover(st)
            if not st.discovered:
                return
            batches = self._batches(st)
            replies = await asyncio.gather(*(self._get(st, oids) for _, oids in batches))

        st.last_uptime_cs = max((u for u in (_uptime(r.values) for r in replies) if u is not None), default=None)
        st.last_mono_ns = max(r.mono_ns for r in replies)
        rediscover = False
        for (rows, oids), reply in zip(batches, replies):
            refreshed = self._refresh_evidence(st, rows, oids, reply.values, reply.mono_ns)
            uptime = _uptime(reply.values)
            for r in rows:
                point, events, gone = self._row(st, r, reply, uptime, refreshed)
                out += events
                if point is not None:
                    out.append(point)
                rediscover |= gone
        if rediscover:
            st.discovered = False   # next round re-walks ifName

    def _restart_reason(self, st: _AgentState, replies: Sequence[Reply]) -> str | None:
        """sysUpTime went back, or advanced clearly less than the least real time that passed.

        The least real time runs from the latest receipt of the previous round to the earliest
        sending of this one: the agent answered each request somewhere in its [sent, received]
        window. Receipt times alone are not enough: on a loaded controller a reply waited
        3.7 s in the event loop (measured under CPU load, 2026-11-27), which read as "sysUpTime
        advanced 1.18 s in 4.6 s" and dropped every agent's rates for the run."""
        if st.last_uptime_cs is None or st.last_mono_ns is None:
            return None
        ups = [u for u in (_uptime(r.values) for r in replies) if u is not None]
        if not ups:
            return None
        now_up = min(ups)
        if now_up < st.last_uptime_cs:
            return f"agent restart: sysUpTime went back from {st.last_uptime_cs} to {now_up} cs"
        least = least_elapsed_cs(min(r.sent_mono_ns for r in replies), st.last_mono_ns)
        advanced = now_up - st.last_uptime_cs
        if restart_suspected(advanced, least):
            return (f"agent restart suspected: sysUpTime advanced {advanced / 100:.2f} s while at least "
                    f"{least / 100:.2f} s passed here")
        return None

    @staticmethod
    def _refresh_evidence(st: _AgentState, rows: Sequence[_Row], oids: Sequence[str],
                          values: dict[str, Any], mono_ns: int) -> bool | None:
        """Did any counter in this request change since it was last read? (one request = one cache state)"""
        from pysnmp.proto.rfc1902 import Counter32, Counter64
        seen, changed = False, False
        in_octets = IF_HC_IN_OCTETS + "."
        slot = tuple(r.ifindex for r in rows)
        for oid in oids:
            v = values.get(oid)
            if not isinstance(v, (Counter32, Counter64)):
                continue
            iv = int(v)
            prev = st.prev_values.get((slot, oid))
            if prev is not None:
                seen = True
                if prev != iv:
                    changed = True
                    if oid.startswith(in_octets):
                        st.last_change[int(oid[len(in_octets):])] = mono_ns
            st.prev_values[(slot, oid)] = iv
        return True if changed else (None if not seen else False)

    def _row(self, st: _AgentState, r: _Row, reply: Reply, uptime: int | None,
             refreshed: bool | None) -> tuple[Point | None, list[Event], bool]:
        from pysnmp.proto.rfc1902 import Counter32, Counter64, Gauge32, TimeTicks
        from pysnmp.proto.rfc1905 import NoSuchInstance, NoSuchObject
        values, recv_ns = reply.values, reply.recv_ns
        host, events = st.cfg.host, []
        fields: dict[str, int | float] = {}
        speed_v = values.get(f"{IF_HIGH_SPEED}.{r.ifindex}")
        speed = int(speed_v) if isinstance(speed_v, Gauge32) else None
        if speed is not None:
            fields["high_speed_mbps"] = speed
        disc_v = values.get(f"{IF_COUNTER_DISCONTINUITY}.{r.ifindex}")
        disc = int(disc_v) if isinstance(disc_v, TimeTicks) else None
        rates: dict[str, tuple[float, float]] = {}
        missing: list[str] = []
        disc_counters: list[str] = []
        disc_reasons: set[str] = set()
        for fname, (col, bits, kind) in COUNTERS.items():
            v = values.get(f"{col}.{r.ifindex}")
            if isinstance(v, (NoSuchInstance, NoSuchObject)) or v is None:
                missing.append(fname)
                continue
            if not isinstance(v, (Counter32, Counter64)):
                events.append(Event("invalid_value", host, recv_ns,
                                    f"{fname} has type {type(v).__name__}, expected a counter: ignored",
                                    r.ifname, r.ifindex, (fname,)))
                continue
            actual_bits = 64 if isinstance(v, Counter64) else 32
            tr = st.trackers.get((r.ifindex, fname))
            if tr is None or tr.bits != actual_bits:
                tr = CounterTracker(actual_bits, kind, st.refresh or st.cfg.refresh,
                                    name=f"{host}/{r.ifname}/{fname}")
                st.trackers[(r.ifindex, fname)] = tr
            upd = tr.update(CounterSample(int(v), uptime, recv_ns, reply.mono_ns, disc, reply.sent_mono_ns),
                            refreshed=refreshed, speed_mbps=speed)
            fields[fname] = int(v)
            for ev in upd.events:
                if ev.kind == "discontinuity":
                    disc_counters.append(fname)
                    disc_reasons.add(ev.reason)
                elif ev.kind == "refresh_mismatch":
                    if st.refresh is None:      # once per agent; every counter of it changes model
                        st.refresh = tr.refresh
                        for other in st.trackers.values():
                            other.refresh = st.refresh
                        events.append(Event(ev.kind, host, recv_ns, f"{r.ifname} {fname}: {ev.reason}",
                                            r.ifname, r.ifindex, (fname,)))
                else:
                    events.append(Event(ev.kind, host, recv_ns, f"{fname}: {ev.reason}",
                                        r.ifname, r.ifindex, (fname,)))
            if upd.rate is not None and upd.interval_s is not None:
                rate_name, mult = RATE_FIELDS[fname]
                rates[rate_name] = (upd.rate * mult, upd.interval_s)
        if disc_counters:
            events.append(Event("discontinuity", host, recv_ns,
                                 "; ".join(sorted(disc_reasons)) + ": new baseline, no rate",
                                 r.ifname, r.ifindex, tuple(disc_counters)))
        if len(missing) == len(COUNTERS):
            events.append(Event("interface_missing", host, recv_ns,
                                f"ifIndex {r.ifindex} ({r.ifname}) no longer answers: rediscovering",
                                r.ifname, r.ifindex))
            return None, events, True
        if missing and (r.ifindex, tuple(missing)) not in st.reported_partial:
            # reported once per (row, set of missing counters), not every round
            st.reported_partial.add((r.ifindex, tuple(missing)))
            events.append(Event("agent_error", host, recv_ns,
                                f"counters {missing} not available on this row (noSuch*): not reported",
                                r.ifname, r.ifindex, tuple(missing)))
        for name, (rate, _) in rates.items():
            fields[name] = rate
        intervals = {round(iv, 3) for _, iv in rates.values()}
        if len(intervals) == 1:
            fields["rate_interval_s"] = intervals.pop()
        else:
            for name, (_, iv) in rates.items():
                fields[f"{name}_interval_s"] = iv
        tags = {"host": host, "ifname": r.ifname, "ifindex": str(r.ifindex)}
        return Point(MEASUREMENT, tags, fields, recv_ns), events, False


def _uptime(values: dict[str, Any]) -> int | None:
    from pysnmp.proto.rfc1902 import TimeTicks
    v = values.get(SYS_UPTIME)
    return int(v) if isinstance(v, TimeTicks) else None


async def poll_round_time(poller: SnmpPoller, rounds: int = 20, pause_s: float = 0.0) -> list[float]:
    """Wall-clock seconds of `rounds` successive poll_once() calls (poller already started).

    For bench/snmp_bench.py: measures the concurrent round over all of the poller's agents.
    """
    loop = asyncio.get_running_loop()
    times: list[float] = []
    for _ in range(rounds):
        t0 = loop.time()
        await poller.poll_once()
        times.append(loop.time() - t0)
        if pause_s:
            await asyncio.sleep(pause_s)
    return times
