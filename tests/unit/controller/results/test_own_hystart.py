"""MCubic's own HyStart exits in a run's summary, with whose they are (controller/results/hystart.py).

Contract: the program's counters (hostctl `hystart_exits`, read at the last holder's unload) go into
`sender_counters.<host>.own_hystart_exits` as the sender's number only when the program was loaded for
this run, no other holder held it while it counted (hostctl's `holders_seen`), and no other sender of
this run ran it on the same kernel; with other senders of this run on that kernel (the virtual rack's
one kernel) the number is given with the hosts it covers; with another holder it is "kernel-wide, shared
with <n> other holders" and no number; not read or not known: null and why. The records below have the
shape a run writes (CongestionState.to_json for the before/applied/restored states, the unload's answers
through CongestionDriver's own readers).
"""
from __future__ import annotations

import json

from controller.commands import CommandResult
from controller.results.hystart import attach_own_hystart, attribution, own_hystart
from controller.results.summary import SENDER_COUNTERS_DEFINITION, congestion_by_host, sender_counters, \
    sender_counters_line
from nodes.congestion.driver import CongestionDriver, CongestionState

ME = "run:vtest/0123456789ab/20261127-0200-shared-bottleneck"
OTHER = "run:vother/ba9876543210/20261127-0159-distinct-bottleneck"


def _state(boot: str, holders: dict[str, list[str]]) -> dict:
    return CongestionState("6.8.0", True, "7.4.0", ["reno", "cubic"] + sorted(holders), ["reno", "cubic"], {},
                           {n: {"id": 41, "sha256": "ab" * 32, "holders": hs} for n, hs in holders.items()},
                           boot).to_json()


def _unload(host: str, name: str, exits: dict | None, seen: list[str] | None, action: str = "unregistered"
            ) -> CommandResult:
    doc = {"ok": True, "action": action, "name": name, "conns_left": 0}
    if exits is not None:
        doc["hystart_exits"] = exits
        doc["holders_seen"] = seen
    return CommandResult(host, ("python3", "-c", "SRC", "unload", name, ME), 0, json.dumps(doc) + "\n", "")


def _host(boot: str, before: dict, applied: dict, unload: CommandResult | None = None, restored: dict | None = None
          ) -> dict:
    """One host's `congestion.hosts.<host>` as CongestionStage writes it (restore_host's readers)."""
    rec = {"before": _state(boot, before), "applied": _state(boot, applied), "restored": _state(boot, restored or {})}
    if unload is not None:
        drv = CongestionDriver(unload.host, ME)
        exits = drv.hystart_exits([unload])
        if exits:
            rec["hystart_exits"] = exits
            rec["holders_seen"] = drv.holders_seen([unload])
    return rec


def _record(**hosts: dict) -> dict:
    return {"holder": ME, "wanted": {h: ["mcubic"] for h in hosts}, "algorithms": {}, "hosts": hosts}


def test_the_driver_reads_who_held_the_program():
    drv = CongestionDriver("sa1", ME)
    got = drv.holders_seen([_unload("sa1", "mcubic", {"ack_train": 2, "delay": 1}, [ME]),
                            _unload("sa1", "mcubic_wrap", {"ack_train": 0, "delay": 0}, None),
                            _unload("sa1", "olia", None, None),
                            _unload("sa1", "mcubic_tcp", {"ack_train": 0, "delay": 0}, [ME, 7])])
    assert got == {"mcubic": [ME], "mcubic_wrap": None, "mcubic_tcp": None}


def test_a_program_loaded_for_this_run_and_held_by_it_alone_is_the_senders():
    """A physical rack: each endpoint its own kernel; sa1 (MPTCP, mcubic) unloaded it, holders_seen is this run."""
    cong = _record(sa1=_host("boot-a", {}, {"mcubic": [ME]}, _unload("sa1", "mcubic", {"ack_train": 3, "delay": 1}, [ME])),
                   sa2=_host("boot-b", {}, {}))
    got = attribution(cong, "sa1", "mcubic", {"sa1": ["mcubic"], "sa2": ["cubic"]})
    assert (got["ack_train"], got["delay"], got["hosts"]) == (3, 1, ["sa1"])
    assert got["attribution"].startswith("sa1's: loaded for this run, no other holder")


def test_on_one_kernel_the_host_that_unloaded_it_need_not_be_the_sender():
    """The virtual rack: sa1 and sa2 are namespaces of one kernel (same boot id), one program; sa2 happened to
    be the last to leave and read the counters. sa2's flows run cubic: the count is sa1's alone; when sa2's TCP
    flows run mcubic too, it is both hosts' together, never sa1's."""
    cong = _record(sa1=_host("boot-1", {}, {"mcubic": [ME]}, _unload("sa1", "mcubic", None, None, action="left")),
                   sa2=_host("boot-1", {}, {"mcubic": [ME]}, _unload("sa2", "mcubic", {"ack_train": 0, "delay": 2}, [ME])))
    got = attribution(cong, "sa1", "mcubic", {"sa1": ["mcubic"], "sa2": ["cubic"]})
    assert (got["ack_train"], got["delay"], got["hosts"]) == (0, 2, ["sa1"]) and got["attribution"].startswith("sa1's")
    both = attribution(cong, "sa1", "mcubic", {"sa1": ["mcubic"], "sa2": ["mcubic"]})
    assert (both["ack_train"], both["hosts"]) == (0, ["sa1", "sa2"])
    assert both["attribution"] == "this run's senders sa1, sa2 together (one kernel, one program): not sa1's alone"


def test_another_holder_while_it_counted_gives_no_number():
    """Another rack's run shared the program during this run and left before it (it is not in any state
    this run read, only in hostctl's holders_seen): kernel-wide, no per-sender number."""
    cong = _record(sa1=_host("boot-1", {}, {"mcubic": [ME]},
                             _unload("sa1", "mcubic", {"ack_train": 5, "delay": 0}, [ME, OTHER])))
    got = attribution(cong, "sa1", "mcubic", {"sa1": ["mcubic"]})
    assert got["ack_train"] is None and got["delay"] is None and "hosts" not in got
    assert got["other_holders"] == 1
    assert got["attribution"].startswith("kernel-wide, shared with 1 other holder (")


def test_a_program_another_run_had_loaded_before_is_not_this_runs():
    """Loaded before this run by another holder that was still there at the end: this run only shared and
    left it (no counters read); before, applied and restored states name the other holder(s)."""
    third = "run:vthird/00000000000a/x"
    cong = _record(sa1=_host("boot-1", {"mcubic": [OTHER]}, {"mcubic": [OTHER, ME]},
                             _unload("sa1", "mcubic", None, None, action="left"), restored={"mcubic": [OTHER, third]}))
    got = attribution(cong, "sa1", "mcubic", {"sa1": ["mcubic"]})
    assert got["ack_train"] is None and got["other_holders"] == 2
    assert got["attribution"].startswith("kernel-wide, shared with 2 other holders")


def test_not_known_or_not_read_says_so():
    older = _record(sa1=_host("boot-1", {}, {"mcubic": [ME]}, _unload("sa1", "mcubic", {"ack_train": 1, "delay": 1}, None)))
    got = attribution(older, "sa1", "mcubic", {"sa1": ["mcubic"]})
    assert got["ack_train"] is None and got["attribution"].startswith("not attributed: sa1's hostctl did not say")
    unread = _record(sa1=_host("boot-1", {}, {"mcubic": [ME]}))           # e.g. the restore never reached the unload
    assert attribution(unread, "sa1", "mcubic", {"sa1": ["mcubic"]})["attribution"].startswith("not read:")
    assert attribution(None, "sa1", "mcubic", {})["attribution"].startswith("not read:")


def _nstat() -> str:
    return "#kernel\nTcpRetransSegs                  0               0.0\n"


def test_the_summary_gets_them_for_senders_running_mcubic_with_hystart_only():
    """attach_own_hystart on sender_counters as a scenario makes them: the MPTCP sender (mcubic) gets its
    attribution and the line shows it; the TCP sender (cubic) and a sender running mcubic_nohs (no HyStart)
    get none; the definition says what the numbers are."""
    assert own_hystart("mcubic") and not own_hystart("mcubic_nohs") and not own_hystart("cubic")
    cong = _record(sa1=_host("boot-1", {}, {"mcubic": [ME]}, _unload("sa1", "mcubic", {"ack_train": 2, "delay": 1}, [ME])),
                   sa2=_host("boot-2", {}, {}), sa3=_host("boot-3", {}, {}))
    nst = {h: (_nstat(), _nstat()) for h in ("sa1", "sa2", "sa3")}
    summary = {"sender_counters": sender_counters(nst, ["sa1", "sa2", "sa3"], congestion_by_host(
        [("sa1", "mcubic"), ("sa2", "cubic"), ("sa3", "mcubic_nohs")]))}
    attach_own_hystart(summary, cong)
    sc = summary["sender_counters"]
    assert sc["sa1"]["own_hystart_exits"]["mcubic"]["ack_train"] == 2
    assert "own_hystart_exits" not in sc["sa2"] and "own_hystart_exits" not in sc["sa3"]
    line = sender_counters_line(sc)
    assert "sa1 HyStart not counted for mcubic (nstat's HyStart counters are Linux cubic's); mcubic's own HyStart " \
           "train 2, delay 1; RTO 0" in line, line
    assert "own_hystart_exits" in SENDER_COUNTERS_DEFINITION and "holders_seen" in SENDER_COUNTERS_DEFINITION
    shared = _record(sa1=_host("boot-1", {}, {"mcubic": [ME]},
                               _unload("sa1", "mcubic", {"ack_train": 2, "delay": 1}, [ME, OTHER])))
    again = {"sender_counters": sender_counters(nst, ["sa1"], {"sa1": ["mcubic"]})}
    line = sender_counters_line(attach_own_hystart(again, shared)["sender_counters"])
    assert "mcubic's own HyStart: kernel-wide, shared with 1 other holder" in line and "train 2" not in line


def test_the_export_describes_every_column_they_make():
    """`ctl runs export` flattens them into the sender_counters table (own_hystart_exits.<program>.<field>):
    the data dictionary describes each of those columns, with its unit (controller/results/columns.py)."""
    from controller.results import columns
    from controller.results.export import summary_rows
    nst = {"sa1": (_nstat(), _nstat())}
    for cong in (_record(sa1=_host("b", {}, {"mcubic": [ME]}, _unload("sa1", "mcubic", {"ack_train": 2, "delay": 1}, [ME]))),
                 _record(sa1=_host("b", {}, {"mcubic": [ME]}, _unload("sa1", "mcubic", {"ack_train": 2, "delay": 1},
                                                                       [ME, OTHER])))):
        summary = attach_own_hystart({"sender_counters": sender_counters(nst, ["sa1"], {"sa1": ["mcubic"]})}, cong)
        _run, tables = summary_rows(summary)
        cols = [c for _name, row in tables["sender_counters"] for c in row if c.startswith("own_hystart_exits.")]
        assert cols
        described = {c: columns.describe("sender_counters", c, "shared-bottleneck", {}) for c in cols}
        assert all(d is not None and d[1] for d in described.values()), described
        assert all(d[0] == "count" for c, d in described.items() if c.endswith((".ack_train", ".delay")))
