"""Registry of tool-output parsers for `ctl parse KIND FILE`.

Each kind names a module and a function `f(text: str) -> JSON-serialisable object`. The
modules are imported lazily so that one parser's import problem stays local. Parsers are
pure: text in, typed objects out; they are tested on recorded real output.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from controller.errors import ParseError, UsageError

KINDS: dict[str, tuple[str, str, str]] = {
    # kind: (module, function, one-line description)
    "iperf3": ("controller.parsers.iperf3", "to_json", "iperf3 --json output (client or server)"),
    "tc-qdisc": ("controller.parsers.tc", "to_json", "tc -j -s qdisc show"),
    "ss": ("controller.parsers.ss", "to_json", "ss -tinM / ss -Mni socket listing"),
    "nstat": ("controller.parsers.nstat", "to_json", "nstat -asz output or /proc/net/netstat"),
    "ip-mptcp": ("controller.parsers.ip_mptcp", "to_json",
                 "ip mptcp endpoint show (text or -j), limits show, or monitor events"),
    "ipfw-pipe-show": ("bridges.ipfw_parse", "pipe_show_to_json", "ipfw pipe show / pipe N show"),
    "ipfw-queue-show": ("bridges.ipfw_parse", "queue_show_to_json", "ipfw queue show"),
    "ipfw-sched-show": ("bridges.ipfw_parse", "sched_show_to_json", "ipfw sched show"),
    "ping": ("controller.parsers.ping", "to_json", "iputils ping output (replies, loss, rtt min/avg/max/mdev)"),
    "snmpwalk": ("controller.parsers.snmpwalk", "to_json", "snmpwalk / snmpget output (numeric or named OIDs)"),
    "mmcli": ("nodes.modem.mmcli", "to_json", "mmcli -m N [-J] [--signal-get] output"),
    "qmicli": ("nodes.modem.qmicli", "to_json", "qmicli --nas-get-* output"),
    "at": ("nodes.modem.at", "to_json", "AT command responses (+CSQ, +CESQ, +QENG, !GSTATUS?, ^HCSQ, "
                                        "^SYSINFOEX, +COPS, +CEREG, +QNWINFO, +QCAINFO, +QSPN)"),
    "wimax": ("nodes.modem.wimax", "to_json", "wimaxcu status link/connect, madwimax log (SOURCE/RECON formats)"),
    "gpsd": ("nodes.modem.gps", "to_json", "gpspipe -w JSON lines"),
    "webtorrent": ("controller.parsers.webtorrent", "to_json",
                   "webtorrent-cli download/seed output, webtorrent info JSON, or a bittorrent-tracker log"),
}


def parser(kind: str) -> Callable[[str], Any]:
    try:
        module, func, _ = KINDS[kind]
    except KeyError:
        raise UsageError(f"unknown parse kind {kind!r} (known: {', '.join(sorted(KINDS))})") from None
    try:
        return getattr(importlib.import_module(module), func)
    except (ModuleNotFoundError, AttributeError) as exc:
        raise UsageError(f"parse kind {kind!r} is not available in this build ({exc})") from None


def parse(kind: str, text: str) -> Any:
    try:
        return parser(kind)(text)
    except ParseError:
        raise
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ParseError(f"{kind}: cannot parse input: {exc}") from exc
