"""Field-test settings (pure): options, which hosts, where the logger keeps its runs, its config.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlparse

from controller.argutil import argv_value
from controller.errors import ParameterError, UsageError
from controller.field.ship import PHYSICAL_ROOT
from controller.inventory import Inventory, Role
from controller.lab.plan import host_dir
from nodes.modem.families import FAMILIES


WORKLOADS = ("iperf3", "torrent", "idle")


@dataclass(frozen=True)
class FieldOptions:
    workload: str = "idle"
    duration_s: float | None = None
    server: str | None = None          # iperf3 server HOST[:PORT]
    rate: str | None = None            # iperf3 -b (download rate asked of the server), e.g. 2M
    torrent: str | None = None         # torrent id for webtorrent-cli (path on the host, magnet, URL)
    torrent_out: str | None = None
    ping: str | None = None            # reference host for RTT/jitter (default: the InfluxDB host)
    interval_s: float = 1.0


def field_root(inv: Inventory, host: str) -> str:
    if inv.kind == "virtual":
        return str(host_dir(inv, host) / "field")
    return PHYSICAL_ROOT


def resolve_device(inv: Inventory, host: str) -> str:
    """The modem device path the logger opens. On a virtual rack a relative path of a serial family is
    under the host's runtime dir (where controller.lab.rack links the AT emulator's pty -- a test double)."""
    modem = inv.hosts[host].modem
    assert modem is not None
    if FAMILIES[modem.family].transport != "serial" or os.path.isabs(modem.device):
        return modem.device
    if inv.kind == "virtual" and ".." not in Path(modem.device).parts:
        return str(host_dir(inv, host) / modem.device)
    raise ParameterError(f"host {host}: modem device {modem.device!r} must be an absolute path (e.g. /dev/ttyUSB2)")


def modem_hosts(inv: Inventory) -> list[str]:
    return inv.by_role(Role.MODEM_HOST)


def check_hosts(inv: Inventory, hosts: Sequence[str]) -> list[str]:
    known = modem_hosts(inv)
    if not known:
        raise UsageError(f"inventory {inv.name} has no modem host (role: modem-host)")
    for h in hosts:
        if h not in inv.hosts:
            raise UsageError(f"no host {h!r} in inventory {inv.name} (modem hosts: {', '.join(known)})")
        if h not in known:
            raise UsageError(f"host {h} has role {inv.hosts[h].role.value}, not modem-host")
    return list(dict.fromkeys(hosts))


def default_ping_target(inv: Inventory) -> str | None:
    if inv.influxdb is not None:
        return urlparse(inv.influxdb.url).hostname
    return None


def check_options(opts: FieldOptions) -> None:
    if opts.workload not in WORKLOADS:
        raise UsageError(f"--workload must be one of {', '.join(WORKLOADS)}")
    if opts.workload == "iperf3" and not opts.server:
        raise UsageError("--workload iperf3 needs --server HOST[:PORT] (an iperf3 server the host can reach)")
    if opts.workload == "torrent" and not opts.torrent:
        raise UsageError("--workload torrent needs --torrent ID (a .torrent path on the host, magnet or URL)")
    if opts.duration_s is not None and opts.duration_s < opts.interval_s:
        raise UsageError("--duration is shorter than one sample")
    # These reach the logger's own commands on the host (iperf3 -c, ping, webtorrent) as argv.
    for flag, value in (("--server", opts.server), ("--rate", opts.rate), ("--torrent", opts.torrent),
                        ("--torrent-out", opts.torrent_out), ("--ping", opts.ping)):
        if value is not None:
            argv_value(value, flag)


def logger_config(inv: Inventory, host: str, run_id: str, opts: FieldOptions, root: str) -> dict[str, Any]:
    """The settings the host's logger runs with (written to its run.json; no secrets)."""
    h = inv.hosts[host]
    workload: dict[str, Any] = {"kind": opts.workload}
    if opts.workload == "iperf3":
        assert opts.server is not None
        server, _, port = opts.server.partition(":")
        workload.update(server=server, port=int(port) if port else 5201, rate=opts.rate, chunk_s=600)
    elif opts.workload == "torrent":
        workload.update(torrent=opts.torrent, out=opts.torrent_out or f"{root}/runs/{run_id}/download")
    modem = None
    if h.modem is not None:
        modem = {"family": h.modem.family, "device": resolve_device(inv, host), "baud": h.modem.baud,
                 "interface": h.modem.interface}
    target = opts.ping or default_ping_target(inv)
    influx = None
    if inv.influxdb is not None:
        influx = {"url": inv.influxdb.url, "org": inv.influxdb.org, "bucket": inv.influxdb.bucket}
    return {
        "run_id": run_id, "host": host, "interval_s": opts.interval_s, "duration_s": opts.duration_s,
        "workload": workload, "tags": {"run": run_id, "scenario": "field", "host": host},
        "modem": modem, "gps": {"gpsd": h.gps.gpsd} if h.gps is not None else None,
        "uplink": h.uplink or (h.modem.interface if h.modem else None),
        "ping": {"target": target, "interval_s": 0.2} if target else None,
        "influx": influx, "fsync_every_s": 1.0, "push_max_backoff_s": 5.0,
    }
