"""mptcp-bittorrent: MPTCP for BitTorrent (Jeon, Roh, Paik, Lee), Fig. 1-3; docs/experiments.md section 4.

Topology: hosts ns1 (seeder) and ns2 (leecher), each on two local paths (`--local1`,
`--local2`; the paper's routers r1, r2) and on an access link (`--seeder-wan`,
`--leecher-wan`) to a NAT router that is each host's default gateway: the "global" path,
slow and long (`--global-bw`, `--global-delay` on each access link, so host to host it is
crossed twice). Behind the router sits the "global" tracker host. ns1 announces its two
local addresses (MPTCP `signal` endpoints), ns2 accepts them: an MPTCP connection gets a
subflow on each local path besides its initial one.

Step 1 (`--step iperf3`, Fig. 2): iperf3 TCP and MPTCP from ns2 to ns1, `--repetitions`
times for each choice of initial path (`--initial all|local1|local2|global`: which address
pair the first subflow uses; "global" connects to the router's outside address, which
forwards to ns1), one test after the other, each `--duration` long. Summary: throughput per
initial path and protocol (median, range) and the subflows MPTCP added; a box plot.

Step 2 (`--step bittorrent`, Fig. 3): bittorrent-tracker and webtorrent-cli (npm, pinned in
nodes/bittorrent, installed by scripts/setup.sh; nothing is fetched at run time). The
tracker runs on ns1 (`--tracker local`, announce on its local1 address) or on the tracker
host behind the NAT (`--tracker global`: peers then learn each other as the router's
outside address, so the first connection takes the global path). A generated payload of
`--size` (paper: 100 MiB) is seeded from ns1 and downloaded by ns2 with TCP and with MPTCP
(both clients under `mptcpize run`), alternating, `--repetitions` times; a fresh seeder per
download. Peers talk TCP only (uTP is left out at install: it is UDP, which MPTCP cannot
carry); DHT, LSD and NAT-PMP cannot be switched off in the CLI but find nothing: every host
is in its own namespace whose only way out is the router, which has no route beyond the
rack. Summary: download time (from the leecher's first output to its completion line, on
the controller clock) and throughput (payload bits / download time) per protocol, the
path of the first connection, MPTCP subflows per path, the downloaded file checked by
SHA-256.
"""
from __future__ import annotations

import functools
import ipaddress
from pathlib import Path
from typing import Any, Mapping

from bridges.base import Direction, PipeConfig
from controller import palette, plots
from controller.errors import ParameterError, ParseError
from controller.inventory import Inventory, Role
from controller.parsers import webtorrent
from controller.results.foreign import check as foreign_check, render_line as foreign_line
from controller.results.summary import (
    data_local_ports,
    flow_throughput,
    format_table,
    subflow_throughput,
)
from controller.scenarios.base import (
    Param,
    RunPlan,
    Scenario,
    cc_param,
    link_param,
    port_base_param,
    queue_param,
    require_host,
    require_link,
    role_param,
)
from controller.scenarios.common import (
    LONG_PATH_KEYS,
    long_path_conversions,
    mptcp_long_path_sysctls,
    paper_table,
    stats,
)
from controller.settings import PROJECT_ROOT
from controller.topology import iface_on, peer_in_subnet, sample_ifaces_for
from controller.traffic.bittorrent import BitTorrentRunner, BtDownload, BtSettings
from controller.traffic.iperf3 import FlowSpec
from controller.units import format_rate_arg, format_size
from nodes.mptcp import EndpointConfig, MptcpEndpoint

TOOLS_DIR = PROJECT_ROOT / "nodes" / "bittorrent"
GAP_S = 3.0          # between consecutive iperf3 tests of step 1
TRACKER_PORT = 6969  # away from webtorrent's default HTTP port 8000
SEED_PORTS = {"tcp": 6881, "mptcp": 6882}
LEECH_PORTS = {"tcp": 6901, "mptcp": 6902}
HTTP_PORTS = {"seed-tcp": 8101, "seed-mptcp": 8102, "leech-tcp": 8201, "leech-mptcp": 8202}
PATH_CHOICES = ("local1", "local2", "global")

TRACKER_HOST_DEFAULT = "tr1"
PARAMS = (
    Param("step", "choice", "bittorrent", "iperf3 (step 1, Fig. 2) or bittorrent (step 2, Fig. 3)",
          choices=("iperf3", "bittorrent")),
    Param("tracker", "choice", "local", "step 2: tracker on ns1 (local) or behind the NAT (global)",
          choices=("local", "global")),
    Param("size", "size", "100MiB", "step 2: generated payload (paper: 100 MiB)", min="64KiB", max="4GiB"),
    Param("repetitions", "int", "10", "runs per initial path and protocol (step 1, paper: 10) / downloads per "
          "protocol (step 2)", min=1, max=100),
    Param("initial", "choice", "all", "step 1: initial path(s) to test", choices=("all",) + PATH_CHOICES),
    Param("duration", "duration", "10s", "step 1: length of each iperf3 test", min=1, max=3600, in_run_id=False),
    Param("timeout", "duration", "600s", "step 2: longest a download may take", min=10, max=86400, in_run_id=False),
    cc_param("cc", None, "congestion control: step 1's iperf3 asks for it per socket (default cubic); step 2's "
                         "BitTorrent clients cannot choose one, so --cc becomes the seeder's and leecher's default "
                         "for the run (default: the hosts' own default, left alone and recorded)"),
    Param("local_bw", "rate", "20M", "rate of each local path", min="100k", max="10G"),
    Param("local_delay", "delay", "5ms", "one-way delay of each local path", min="0", max="1s"),
    Param("global_bw", "rate", "5M", "rate of each access link of the global path", min="10k", max="10G"),
    Param("global_delay", "delay", "50ms", "one-way delay of each access link of the global path", min="0", max="2s"),
    queue_param("50", "queue of every shaped link: slots or bytes"),
    role_param("seeder", "ns1", "seeder / iperf3 server (MPTCP announces its local addresses)"),
    role_param("leecher", "ns2", "leecher / iperf3 client"),
    role_param("tracker_host", TRACKER_HOST_DEFAULT, "host of the global tracker (behind the NAT router; "
               "used with --tracker global)"),
    link_param("local1", "lp1", "inventory link of local path 1"),
    link_param("local2", "lp2", "inventory link of local path 2"),
    link_param("seeder_wan", "wan1", "the seeder's access link to the NAT router"),
    link_param("leecher_wan", "wan2", "the leecher's access link to the NAT router"),
    Param("bt_tools", "path", None, "step 2: directory on the seeder, leecher and tracker host holding nodes/bittorrent "
          "installed (`npm ci`: node_modules/.bin/webtorrent, bittorrent-tracker); default: this checkout's "
          "nodes/bittorrent (the virtual rack's hosts share the controller's file system)", in_run_id=False),
    port_base_param("step 1: first iperf3 port (the router must forward them to the seeder)"),
)


# ---- planning ------------------------------------------------------------------------------------

def router_outside(inv: Inventory, host: str, wan_link: str, what: str) -> tuple[str, str]:
    """(router, its outside address) for a host whose default gateway is on `wan_link`."""
    i = iface_on(inv, host, wan_link, what)
    if not i.gateway:
        raise ParameterError(f"{what}: {host} {i.name} (on {wan_link}) has no `gateway`: the global path needs the "
                             "NAT router as the host's default gateway")
    for rname, r in sorted(inv.hosts.items()):
        if r.role is Role.ROUTER and any(x.ip == i.gateway for x in r.interfaces):
            if r.nat is None:
                raise ParameterError(f"{what}: router {rname} has no `nat`")
            addr = inv.address_of(rname, r.nat.outside)
            assert addr is not None
            return rname, addr
    raise ParameterError(f"{what}: no router in inventory {inv.name} has {host}'s gateway {i.gateway}")


def require_forward(inv: Inventory, router: str, port: int, to: str, what: str) -> None:
    nat = inv.hosts[router].nat
    assert nat is not None
    if not any(f.covers("tcp", port) and f.to == to for f in nat.forwards):
        raise ParameterError(f"{what}: router {router} does not forward tcp port {port} to {to} "
                             f"(add it under hosts.{router}.nat.forwards)")


def _common(p: Mapping[str, Any], inv: Inventory) -> dict:
    for l in ("local1", "local2", "seeder_wan", "leecher_wan"):
        require_link(inv, p[l], f"--{l.replace('_', '-')}")
    for role in ("seeder", "leecher"):
        require_host(inv, p[role], Role.ENDPOINT, f"--{role}")
    seeder, leecher = p["seeder"], p["leecher"]
    local = {}
    for n in ("local1", "local2"):
        c = iface_on(inv, leecher, p[n], "leecher")
        s = peer_in_subnet(inv, seeder, c, "seeder")
        local[n] = (c, s)
    router, outside = router_outside(inv, seeder, p["seeder_wan"], "seeder")
    router2, _ = router_outside(inv, leecher, p["leecher_wan"], "leecher")
    if router2 != router:
        raise ParameterError(f"mptcp-bittorrent: seeder and leecher have different gateways ({router}, {router2})")
    links = {}
    for n in ("local1", "local2"):
        for d in Direction:
            links[(p[n], d)] = PipeConfig(bw_bps=p["local_bw"], delay_us=p["local_delay"], queue=p["queue"])
    for n in ("seeder_wan", "leecher_wan"):
        for d in Direction:
            links[(p[n], d)] = PipeConfig(bw_bps=p["global_bw"], delay_us=p["global_delay"], queue=p["queue"])
    # The BitTorrent clients choose no congestion control per connection: in step 2 their
    # connections run the host's default, so --cc becomes the seeder's and the leecher's default
    # for the run (restored after it). iperf3 (step 1) asks per socket with -C.
    default_cc = {"net.ipv4.tcp_congestion_control": p["cc"]} if p["step"] == "bittorrent" and p["cc"] else {}
    ccs = frozenset({cc_of(p)}) if cc_of(p) else frozenset()
    endpoints = {
        # The seeder (the side that accepts connections) announces its two local addresses;
        # never its access-link address, so a connection made over the global path gains
        # exactly one subflow per local path.
        seeder: EndpointConfig(subflows=2, add_addr_accepted=2, congestion_controls=ccs,
                               sysctls=default_cc,
                               endpoints=tuple(MptcpEndpoint(s.ip, s.name, ("signal",)) for _, s in local.values())),
        # Host to host the global path crosses both access links: RTT = 4 x --global-delay.
        leecher: EndpointConfig(subflows=2, add_addr_accepted=2, congestion_controls=ccs,
                                sysctls={**mptcp_long_path_sysctls(max(4 * p["global_delay"], 2 * p["local_delay"])),
                                         **default_cc},
                                optional_sysctls=frozenset(LONG_PATH_KEYS)),
    }
    all_links = [p["local1"], p["local2"], p["seeder_wan"], p["leecher_wan"]]
    conversions = long_path_conversions(leecher, max(4 * p["global_delay"], 2 * p["local_delay"]))
    return {"local": local, "router": router, "outside": outside, "links": links, "endpoints": endpoints,
            "conversions": conversions,
            "sample": sample_ifaces_for(inv, (seeder, leecher, router), all_links),
            "seeder_wan_ip": iface_on(inv, seeder, p["seeder_wan"], "seeder").ip,
            "leecher_wan_ip": iface_on(inv, leecher, p["leecher_wan"], "leecher").ip}


def iperf3_tests(p: Mapping[str, Any]) -> list[tuple[int, str, str]]:
    """(repetition, initial path, protocol) in run order."""
    paths = PATH_CHOICES if p["initial"] == "all" else (p["initial"],)
    return [(rep, path, proto) for rep in range(1, p["repetitions"] + 1) for path in paths for proto in ("tcp", "mptcp")]


def path_label(p: Mapping[str, Any], path: str) -> str:
    return "global" if path == "global" else p[path]


def plan(p: Mapping[str, Any], inv: Inventory) -> RunPlan:
    c = _common(p, inv)
    seeder, leecher = p["seeder"], p["leecher"]
    if p["step"] == "iperf3":
        flows = []
        for k, (rep, path, proto) in enumerate(iperf3_tests(p)):
            port = p["port_base"] + k
            if path == "global":
                client_ip = iface_on(inv, leecher, p["leecher_wan"], "leecher").ip
                server_ip, link = c["outside"], p["leecher_wan"]
                require_forward(inv, c["router"], port, c["seeder_wan_ip"], "--initial global")
            else:
                ci, si = c["local"][path]
                client_ip, server_ip, link = ci.ip, si.ip, p[path]
            flows.append(FlowSpec(f"{proto}-{path_label(p, path)}-{rep}", proto, leecher, seeder, server_ip, port,
                                  client_addr=client_ip, cc=cc_of(p), duration_s=p["duration"],
                                  start_delay_s=k * (p["duration"] + GAP_S), link=link))
        return RunPlan(links=c["links"], endpoints=c["endpoints"], flows=flows, sample_ifaces=c["sample"],
                       duration_s=p["duration"], mptcp_hosts=sorted({seeder, leecher}), conversions=c["conversions"],
                       notes=[f"{len(flows)} iperf3 tests one after the other, {p['duration']:g} s each, "
                              f"{GAP_S:g} s apart"])
    return plan_bittorrent(p, inv, c)


def bt_settings(p: Mapping[str, Any], inv: Inventory, c: Mapping[str, Any]):
    seeder = p["seeder"]
    if p["tracker_host"] not in inv.hosts and (p["tracker"] == "global" or p["tracker_host"] != TRACKER_HOST_DEFAULT):
        # a host the rack does not have is an error even where the tracker is local (it is then
        # unused, but a typo must not pass a dry run); the default only matters for --tracker global
        require_host(inv, p["tracker_host"], Role.ENDPOINT, "--tracker-host")
    if p["tracker"] == "local":
        tracker_host, bind = seeder, c["local"]["local1"][1].ip
    else:
        require_host(inv, p["tracker_host"], Role.ENDPOINT, "--tracker-host")
        th = inv.hosts[p["tracker_host"]]
        addrs = [i.ip for i in th.interfaces if i.ip]
        if not addrs:
            raise ParameterError(f"--tracker-host: {p['tracker_host']} has no data address")
        tracker_host, bind = p["tracker_host"], addrs[0]
        for proto in ("tcp", "mptcp"):
            require_forward(inv, c["router"], SEED_PORTS[proto], c["seeder_wan_ip"], "--tracker global")
            require_forward(inv, c["router"], LEECH_PORTS[proto], c["leecher_wan_ip"], "--tracker global")
    return BtSettings(tools_dir=p.get("bt_tools") or str(TOOLS_DIR), seeder=seeder, leecher=p["leecher"], tracker_host=tracker_host,
                      tracker_bind=bind, tracker_port=TRACKER_PORT, size_bytes=p["size"],
                      repetitions=p["repetitions"], protocols=("tcp", "mptcp"), seed_ports=dict(SEED_PORTS),
                      leech_ports=dict(LEECH_PORTS), http_ports=dict(HTTP_PORTS), download_timeout_s=p["timeout"])


def plan_bittorrent(p: Mapping[str, Any], inv: Inventory, c: Mapping[str, Any]) -> RunPlan:
    s = bt_settings(p, inv, c)
    # Where the leecher will connect: the seeder's local address (local tracker) or, as a
    # global tracker sees every peer, the router's outside address.
    first = c["local"]["local1"][1].ip if p["tracker"] == "local" else c["outside"]
    link = p["local1"] if p["tracker"] == "local" else p["leecher_wan"]
    flows = [FlowSpec(f"bt-{proto}", proto, p["leecher"], p["seeder"], first, SEED_PORTS[proto], cc=p["cc"],
                      link=link) for proto in ("tcp", "mptcp")]
    sample = dict(c["sample"])
    if s.tracker_host not in sample:
        sample[s.tracker_host] = [i.name for i in inv.hosts[s.tracker_host].interfaces if i.ip][:1]
    return RunPlan(links=c["links"], endpoints=c["endpoints"], flows=flows, sample_ifaces=sample,
                   duration_s=p["timeout"], mptcp_hosts=sorted({p["seeder"], p["leecher"]}),
                   conversions=c["conversions"],
                   traffic_factory=functools.partial(_factory, settings=s),
                   notes=[f"{2 * p['repetitions']} downloads of {format_size(p['size'])} (TCP and MPTCP alternating), "
                          f"tracker {s.announce}"])


def _factory(pool: Any, plan: RunPlan, record: Any, *, settings: Any) -> Any:
    return BitTorrentRunner(pool, plan.flows, settings, record)


# ---- summaries -----------------------------------------------------------------------------------

def _on(points: Any, host: str) -> list[Any]:
    return [pt for pt in points if pt.measurement == "subflow" and pt.tags.get("host") == host]


def _subflows_by_link(subs: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in subs:
        if s.get("bytes", 0) > 0 or s.get("samples", 0) > 0:
            out[s["link"] or "?"] = out.get(s["link"] or "?", 0) + 1
    return out


def _ip_of(addr: str) -> str:
    """`10.1.0.1:6881`, `::ffff:10.1.0.1:6881`, `[::1]:6881` -> the IPv4 (or IPv6) address."""
    host = addr.rsplit(":", 1)[0].strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return str(ip)


def _per_link(subs: list[dict]) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in subs:
        out[s["link"]] = round(out.get(s["link"], 0.0) + (s["mbps"] or 0.0), 3)
    return out


def _label_of_addr(inv: Inventory, p: Mapping[str, Any], addr: str, outside: str) -> str:
    ip = _ip_of(addr)
    if ip == outside:
        return "global"
    return inv.link_of_address(ip) or "?"


def cc_of(p: Mapping[str, Any]) -> str | None:
    """The congestion control the run asks for: step 1's iperf3 always asks (cubic unless
    --cc); step 2 only when --cc is given (None: the hosts' default)."""
    if p["step"] == "iperf3":
        return p["cc"] or "cubic"
    return p["cc"]


def host_default_cc(data: Any) -> dict[str, str]:
    """host -> its default congestion control as read before the run (what connections that
    choose none run when the run does not set it)."""
    return {h: s.get("net.ipv4.tcp_congestion_control", "?") for h, s in sorted(data.host_sysctls.items())
            if h in (data.params["seeder"], data.params["leecher"])}


def summarize(data: Any) -> dict:
    p = data.params
    if p["step"] == "iperf3":
        return summarize_iperf3(data)
    return summarize_bittorrent(data)


def _par(p: Mapping[str, Any]) -> dict:
    return {"step": p["step"], "cc": cc_of(p) or "the hosts' default", "local_bw": format_rate_arg(p["local_bw"]),
            "local_delay_ms": p["local_delay"] / 1000, "global_bw": format_rate_arg(p["global_bw"]),
            "global_delay_ms": p["global_delay"] / 1000, "queue": str(p["queue"]), "repetitions": p["repetitions"],
            "local1": p["local1"], "local2": p["local2"]}


def summarize_iperf3(data: Any) -> dict:
    p = data.params
    tests = []
    reasons = []
    for r in data.flows:
        # names are <protocol>-<path>-<repetition>; a link name may itself contain "-"
        proto = r.spec.protocol
        path, rep = r.spec.name[len(proto) + 1:].rsplit("-", 1)[0], int(r.spec.name.rsplit("-", 1)[1])
        f = flow_throughput(r)
        t0 = r.client_started or data.window[0]
        subs = subflow_throughput(_on(data.points, r.spec.client), r.spec.name, (t0, t0 + p["duration"]),
                                  role="client", data_ports=data_local_ports(r)) if r.client_json else []
        mptcp_used = any(s.get("mptcp_token") for s in subs)
        if f.error:
            reasons.append(f"{r.spec.name}: {f.error}")
        elif proto == "mptcp" and not mptcp_used:
            reasons.append(f"{r.spec.name}: the connection was not MPTCP (no subflow with an MPTCP token)")
        tests.append({"name": r.spec.name, "protocol": proto, "initial": path, "repetition": rep,
                      "receiver_mbps": round(f.receiver_bps / 1e6, 3) if f.receiver_bps else None,
                      "sender_mbps": round(f.sender_bps / 1e6, 3) if f.sender_bps else None,
                      "subflows_per_link": _subflows_by_link(subs) if proto == "mptcp" else {},
                      "error": f.error})
    paths = list(dict.fromkeys(t["initial"] for t in tests))
    rows = []
    for path in paths:
        row: dict[str, Any] = {"initial": path}
        for proto in ("tcp", "mptcp"):
            row[proto] = stats([t["receiver_mbps"] for t in tests
                                if t["initial"] == path and t["protocol"] == proto and t["receiver_mbps"] is not None])
        m, t = row["mptcp"]["median"], row["tcp"]["median"]
        row["mptcp_over_tcp"] = round(m / t, 3) if m and t else None
        subs = [x["subflows_per_link"] for x in tests if x["initial"] == path and x["protocol"] == "mptcp"]
        row["mptcp_subflows_per_link"] = subs[-1] if subs else {}
        rows.append(row)
    table = paper_table("Fig. 2: iperf3 throughput (Mbit/s, median over repetitions) per initial path",
                        ["initial path", "TCP", "MPTCP", "MPTCP/TCP"],
                        [[r["initial"], r["tcp"]["median"], r["mptcp"]["median"], r["mptcp_over_tcp"]] for r in rows])
    return foreign_check({"scenario": "mptcp-bittorrent", "step": "iperf3", "parameters": {**_par(p), "duration_s": p["duration"]},
            "paths": rows, "tests": tests, "paper_table": table,
            "mptcp_better_on_every_path": all((r["mptcp_over_tcp"] or 0) > 1 for r in rows) if rows else None,
            "valid": not reasons, "invalid_reasons": reasons,
            "definitions": {"receiver_mbps": "iperf3 receiver goodput of one test (ns2 -> ns1)",
                            "initial": "the path of the first subflow: a local link, or global (to the router's "
                                       "outside address, forwarded to the seeder)",
                            "mptcp_subflows_per_link": "subflows of the last MPTCP test seen at the client (ss)"}}, data)


def summarize_bittorrent(data: Any) -> dict:
    p = data.params
    inv = data.inventory
    _, outside = router_outside(inv, p["seeder"], p["seeder_wan"], "seeder")
    rows = []
    reasons = []
    for d in data.flows:
        if isinstance(d, dict):
            d = BtDownload.from_json(d)
        try:
            out = webtorrent.parse_client(d.text())
        except ParseError as exc:        # a leecher output ctl cannot read: nothing taken from it, said why
            out = webtorrent.ClientOutput()
            reasons.append(f"{d.name}: leecher output unreadable: {exc}")
        secs = d.download_s
        mbps = round(p["size"] * 8 / secs / 1e6, 3) if secs and d.complete else None
        lo = d.client_started or data.window[0]
        hi = d.exited or data.window[1]
        # The leecher's sockets only (webtorrent also connects a seeder to itself: it learns its
        # own address from the tracker, and those sockets carry the seeder port too); what
        # they received is the download.
        subs = subflow_throughput(data.points, d.spec.name, (lo, hi), role=None, host=p["leecher"],
                                  counter="bytes_received")
        own = {i.ip for i in inv.hosts[p["leecher"]].interfaces if i.ip}
        peers = [a for a in out.peer_addrs if _ip_of(a) not in own]   # not its own self-connection
        peer_paths = sorted({_label_of_addr(inv, p, a, outside) for a in peers})
        tokens = any(s.get("mptcp_token") for s in subs)
        if d.error:
            reasons.append(f"{d.name}: {d.error}")
        elif not d.complete:
            reasons.append(f"{d.name}: download incomplete or corrupt")
        if any(t.startswith("UTP") for t in out.peer_types):
            reasons.append(f"{d.name}: a uTP peer connection (UDP: MPTCP cannot apply)")
        if d.protocol == "mptcp" and d.complete and not tokens:
            reasons.append(f"{d.name}: the peer connection was not MPTCP")
        if d.protocol == "tcp" and tokens:
            reasons.append(f"{d.name}: a TCP download used MPTCP")
        rows.append({"name": d.name, "protocol": d.protocol, "repetition": d.repetition, "complete": d.complete,
                     "download_s": round(secs, 3) if secs is not None else None, "throughput_mbps": mbps,
                     "cli_seconds": out.done["seconds"] if out.done else None,
                     "peer_types": out.peer_types, "peer_addrs": peers, "first_path": peer_paths,
                     "subflows_per_link": _subflows_by_link(subs) if d.protocol == "mptcp" else {},
                     "received_mbps_per_link": _per_link(subs),
                     "sha256_ok": d.sha256 is not None and d.sha256 == d.expected_sha256, "error": d.error})
    per_proto = {}
    for proto in ("tcp", "mptcp"):
        rs = [r for r in rows if r["protocol"] == proto]
        per_proto[proto] = {"throughput_mbps": stats([r["throughput_mbps"] for r in rs]),
                            "download_s": stats([r["download_s"] for r in rs if r["complete"]]),
                            "complete": sum(1 for r in rs if r["complete"]), "downloads": len(rs),
                            "first_path": sorted({x for r in rs for x in r["first_path"]}),
                            "subflows_per_link": next((r["subflows_per_link"] for r in reversed(rs)
                                                       if r["subflows_per_link"]), {})}
    m, t = per_proto["mptcp"]["throughput_mbps"]["mean"], per_proto["tcp"]["throughput_mbps"]["mean"]
    table = paper_table(f"Fig. 3{'a' if p['tracker'] == 'local' else 'b'}: webtorrent download throughput "
                        f"(Mbit/s), tracker {p['tracker']}", ["protocol", "mean Mbit/s", "mean download s", "n"],
                        [[proto.upper(), per_proto[proto]["throughput_mbps"]["mean"],
                          per_proto[proto]["download_s"]["mean"], per_proto[proto]["complete"]]
                         for proto in ("tcp", "mptcp")])
    return foreign_check({"scenario": "mptcp-bittorrent", "step": "bittorrent", "paper_table": table,
            "parameters": {**_par(p), "tracker": p["tracker"], "size_bytes": p["size"], "size": format_size(p["size"]),
                           "host_default_cc": host_default_cc(data)},
            "protocols": per_proto, "downloads": rows,
            "tcp_mbps": t, "mptcp_mbps": m, "mptcp_over_tcp": round(m / t, 3) if m and t else None,
            "valid": not reasons, "invalid_reasons": reasons,
            "definitions": {"download_s": "controller time from the leecher's first output line to its "
                                          "'torrent downloaded successfully' line (announce, metadata and data)",
                            "throughput_mbps": "payload bits / download_s",
                            "first_path": "path of the peer connection(s) the leecher listed (the seeder's "
                                          "local address, or global: the router's outside address); its "
                                          "connections to itself left out",
                            "received_mbps_per_link": "bytes_received of the leecher's sockets to the seeder "
                                                      "port (ss, 10 Hz) per link, over the download",
                            "complete": "leecher exit 0 and the file's SHA-256 equals the payload's"}}, data)


def render(s: dict) -> str:
    par = s["parameters"]
    paths = (f"local paths {par['local1']}, {par['local2']}: {par['local_bw']} {par['local_delay_ms']:g} ms; global: "
             f"{par['global_bw']} {par['global_delay_ms']:g} ms per access link; queue {par['queue']}; cc {par['cc']}")
    if par.get("host_default_cc") and s["step"] != "iperf3" and par["cc"] == "the hosts' default":
        paths += " (" + ", ".join(f"{h}: {cc}" for h, cc in par["host_default_cc"].items()) + ")"
    out = []
    if s["step"] == "iperf3":
        rows = []
        for r in s["paths"]:
            t, m = r["tcp"], r["mptcp"]
            rows.append([r["initial"], t["median"], f"{t['min']}-{t['max']}" if t["n"] else "-", m["median"],
                         f"{m['min']}-{m['max']}" if m["n"] else "-", f"{t['n']}/{m['n']}", r["mptcp_over_tcp"],
                         ", ".join(f"{k} {v}" for k, v in r["mptcp_subflows_per_link"].items()) or "-"])
        out.append(format_table(["initial path", "TCP median", "TCP range", "MPTCP median", "MPTCP range", "n",
                                 "MPTCP/TCP", "MPTCP subflows"], rows,
                                title=f"mptcp-bittorrent step 1 (iperf3, Fig. 2), Mbit/s over "
                                      f"{par['duration_s']:g} s tests x {par['repetitions']}; {paths}"))
        out.append("paper: MPTCP beats TCP for every initial path; both are slow when it is the global path. "
                   f"here: MPTCP better on every path: {s['mptcp_better_on_every_path']}")
    else:
        rows = []
        for proto in ("tcp", "mptcp"):
            x = s["protocols"][proto]
            th, dl = x["throughput_mbps"], x["download_s"]
            rows.append([proto, th["mean"], th["median"], f"{th['min']}-{th['max']}" if th["n"] else "-",
                         dl["mean"], f"{x['complete']}/{x['downloads']}", ", ".join(x["first_path"]) or "-",
                         ", ".join(f"{k} {v}" for k, v in x["subflows_per_link"].items()) or "-"])
        out.append(format_table(["protocol", "mean Mbit/s", "median Mbit/s", "range Mbit/s", "mean download s",
                                 "complete", "first path", "MPTCP subflows"], rows,
                                title=f"mptcp-bittorrent step 2 (webtorrent, Fig. 3{'a' if par['tracker'] == 'local' else 'b'}"
                                      f": tracker {par['tracker']}), {par['size']} x {par['repetitions']}; {paths}"))
        drows = [[d["name"], d["download_s"], d["throughput_mbps"], d["cli_seconds"], ", ".join(d["first_path"]),
                  ", ".join(d["peer_types"]),
                  ", ".join(f"{k} {v}" for k, v in d["received_mbps_per_link"].items()) or "-",
                  "ok" if d["complete"] else (d["error"] or "incomplete")] for d in s["downloads"]]
        out.append(format_table(["download", "seconds", "Mbit/s", "CLI s", "first path", "peer",
                                 "received Mbit/s per path", "status"], drows))
        out.append(f"MPTCP / TCP (mean throughput): {s['mptcp_over_tcp']}   paper: MPTCP faster with the tracker "
                   "local; with it global both slow (the first subflow takes the global path)")
    if foreign_line(s):
        out.append(foreign_line(s))
    if not s["valid"]:
        out.append("RESULT INVALID: " + "; ".join(s["invalid_reasons"]))
    return "\n\n".join(out)


def figures(data: Any, summary: dict, out_dir: Path, output: plots.Output | None = None) -> list[str]:
    """Step 1: per initial path, TCP and MPTCP box plots over the tests (each test a dot; a box only
    from two tests, one test is its dot alone). Step 2: mean download throughput per protocol with
    each download, and each download's progress. TCP and MPTCP in their colours (controller.palette)."""
    plt = plots.pyplot()
    out = output or plots.DEFAULT
    caption = plots.run_caption(out.run_id or Path(data.record_dir).name, data.window[0])
    protos = (("tcp", palette.role_style("tcp")), ("mptcp", palette.role_style("mptcp")))
    if summary["step"] == "iperf3":
        fig, ax = plt.subplots(figsize=(9, 4.6), layout="constrained")
        ticks, labels, single = [], [], 0
        for i, r in enumerate(summary["paths"]):
            for j, (proto, st) in enumerate(protos):
                x = 3 * i + j + 1
                vals = [t["receiver_mbps"] for t in summary["tests"]
                        if t["initial"] == r["initial"] and t["protocol"] == proto and t["receiver_mbps"] is not None]
                if len(vals) >= 2:
                    bp = ax.boxplot([vals], positions=[x], patch_artist=True, widths=0.6, showfliers=False)
                    for patch in bp["boxes"]:
                        patch.set(facecolor=st.color, alpha=0.45, hatch=st.hatch)
                elif vals:
                    single += 1
                ax.plot([x] * len(vals), vals, ls="none", marker=st.marker, color=st.color, mec="black",
                        markersize=5, label=st.name if i == 0 else None)
            ticks.append(3 * i + 1.5)
            labels.append(f"initial path {r['initial']}")
        ax.set_xticks(ticks, labels, fontsize=8)
        ax.set_xlim(0, 3 * len(summary["paths"]))
        ax.set_ylabel("iperf3 throughput at the receiver (Mbit/s)")
        ax.set_title("step 1: TCP vs MPTCP per initial path (Fig. 2)"
                     + (f"; {single} with one test: its value alone, no box" if single else ""), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        plots.legend(ax)
        name = "boxplot.png"
    else:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [1, 1.6]},
                                       layout="constrained")
        for i, (proto, st) in enumerate(protos):
            vals = [d["throughput_mbps"] for d in summary["downloads"] if d["protocol"] == proto
                    and d["throughput_mbps"] is not None]
            mean = summary["protocols"][proto]["throughput_mbps"]["mean"]
            if len(vals) >= 2:
                ax1.bar([i], [mean or 0.0], color=st.color, hatch=st.hatch, alpha=0.6, edgecolor="black", lw=0.6,
                        label=f"{st.name}: mean of {len(vals)}")
            ax1.plot([i] * len(vals), vals, ls="none", marker=st.marker, color=st.color, mec="black", markersize=6,
                     label=f"{st.name}: each download" + (" (one: no mean drawn)" if len(vals) == 1 else ""))
        ax1.set_xticks([0, 1], ["TCP", "MPTCP"])
        ax1.set_xlim(-0.7, 1.7)
        ax1.set_ylim(bottom=0)
        ax1.set_ylabel("download throughput (Mbit/s)")
        ax1.set_title(f"tracker {summary['parameters']['tracker']} (Fig. 3)", fontsize=9)
        ax1.grid(axis="y", alpha=0.3)
        plots.legend(ax1, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=1)
        used: dict[str, int] = {}
        for d in data.flows:
            if isinstance(d, dict):
                d = BtDownload.from_json(d)
            prog = webtorrent.progress(d.lines)
            if not prog or d.first_output is None:
                continue
            st = palette.role_style(d.protocol)
            k = used.get(d.protocol, 0)
            used[d.protocol] = k + 1
            ax2.plot([t - d.first_output for t, _ in prog], [b / 1e6 for _, b in prog], color=st.color,
                     ls=("-", "--", ":", "-.")[k % 4], lw=1.4, label=f"{st.name}, download {d.repetition}")
        ax2.set_xlabel("time since the leecher started (s)")
        ax2.set_ylabel("downloaded (MB, as the client prints it)")
        ax2.set_title("download progress per repetition", fontsize=9)
        ax2.grid(alpha=0.3)
        plots.legend(ax2)
        name = "bittorrent.png"
    plots.titled(fig, f"mptcp-bittorrent step {1 if summary['step'] == 'iperf3' else 2}", caption)
    return [plots.save(fig, Path(out_dir) / name, out).name]


SCENARIO = Scenario(
    name="mptcp-bittorrent",
    title="MPTCP vs TCP for iperf3 and BitTorrent (webtorrent), local vs global tracker (Jeon et al. Fig. 2-3)",
    reference="Jeon, Roh, Paik, Lee: Feasibility of Adopting Multipath TCP to BitTorrent-based Applications with "
              "Mininet; docs/experiments.md section 4",
    description=__doc__ or "",
    params=PARAMS,
    plan=plan,
    summarize=summarize,
    render=render,
    figures=figures,
    # Downloads and iperf3 tests run one after the other and do not depend on each other: the
    # ones that ended before an interruption are summarized (marked partial by the runner).
    summarize_partial=summarize,
    distinct=(("seeder", "leecher", "tracker_host"), ("local1", "local2", "seeder_wan", "leecher_wan")),
)
