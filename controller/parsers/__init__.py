"""Registry of tool-output parsers for `ctl parse KIND FILE`.

Each kind names a module and a function `f(text: str) -> JSON-serialisable object` in the
one registry (`controller.registry`); the modules are imported lazily so that one parser's
import problem stays local. Parsers are pure: text in, typed objects out; they are tested on recorded real output.
"""
from __future__ import annotations

from typing import Any, Callable

from controller.errors import ParseError, UsageError
from controller.registry import Registry

PARSERS: Registry = Registry("parse kind", UsageError)
PARSERS.lazy("iperf3", "controller.parsers.iperf3:to_json",
             "iperf3 --json output (client or server)")
PARSERS.lazy("tc-qdisc", "controller.parsers.tc:to_json",
             "tc -j -s qdisc show")
PARSERS.lazy("ss", "controller.parsers.ss:to_json",
             "ss -tinM / ss -Mni socket listing")
PARSERS.lazy("nstat", "controller.parsers.nstat:to_json",
             "nstat -asz output or /proc/net/netstat")
PARSERS.lazy("ip-mptcp", "controller.parsers.ip_mptcp:to_json",
             "ip mptcp endpoint show (text or -j), limits show, or monitor events")
PARSERS.lazy("ipfw-pipe-show", "bridges.ipfw_parse:pipe_show_to_json",
             "ipfw pipe show / pipe N show")
PARSERS.lazy("ipfw-queue-show", "bridges.ipfw_parse:queue_show_to_json",
             "ipfw queue show")
PARSERS.lazy("ipfw-sched-show", "bridges.ipfw_parse:sched_show_to_json",
             "ipfw sched show")
PARSERS.lazy("ping", "controller.parsers.ping:to_json",
             "iputils ping output (replies, loss, rtt min/avg/max/mdev)")
PARSERS.lazy("snmpwalk", "controller.parsers.snmpwalk:to_json",
             "snmpwalk / snmpget output (numeric or named OIDs)")
PARSERS.lazy("mmcli", "nodes.modem.mmcli:to_json",
             "mmcli -m N [-J] [--signal-get] output")
PARSERS.lazy("qmicli", "nodes.modem.qmicli:to_json",
             "qmicli --nas-get-* output")
PARSERS.lazy("at", "nodes.modem.at:to_json",
             "AT command responses (+CSQ, +CESQ, +QENG, !GSTATUS?, ^HCSQ, ^SYSINFOEX, +COPS, +CEREG, +QNWINFO, +QCAINFO, +QSPN)")
PARSERS.lazy("wimax", "nodes.modem.wimax:to_json",
             "wimaxcu status link/connect, madwimax log (SOURCE/RECON formats)")
PARSERS.lazy("gpsd", "nodes.modem.gps:to_json",
             "gpspipe -w JSON lines")
PARSERS.lazy("webtorrent", "controller.parsers.webtorrent:to_json",
             "webtorrent-cli download/seed output, webtorrent info JSON, or a bittorrent-tracker log")


def kinds() -> list[str]:
    return PARSERS.names()


def parser(kind: str) -> Callable[[str], Any]:
    return PARSERS.get(kind)


def parse(kind: str, text: str) -> Any:
    try:
        return parser(kind)(text)
    except ParseError:
        raise
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ParseError(f"{kind}: cannot parse input: {exc}") from exc
