"""Load, share and unload ctl's BPF congestion controls on one host (standard library only).

Shipped to a host as a constant script (`python3 -c SOURCE VERB ARGS...`, data only in argv
and stdin) and run as root. BPF struct_ops and `net.ipv4.tcp_allowed_congestion_control` are
kernel-wide, and one kernel may serve several racks at once (the virtual racks of one
machine), so each loaded algorithm keeps a list of holders (run ids) in
/run/ctl-cc/holders.json under an flock: the first holder registers it (and adds it to the
allowed list if it was not there), later holders share it, the last one to leave unregisters
it (by the id it registered) and takes back exactly what it added. An algorithm registered by
something else than ctl is never touched. Every verb prints one JSON object.

Before the last holder unregisters a program it counts the entries left in the program's
coupling map (`<short>_conns`, found through the programs of the struct_ops map it registered,
never by name alone: another rack's program may have a map of the same name): every MPTCP
connection deletes its entry when its last subflow leaves, so a count above zero once the
connections are gone is a phantom the program failed to clear. It waits up to CONNS_WAIT_S for
closing sockets to be released, and reports the count as `conns_left`. It also reports
`coupling_refused`: the subflows the program refused to couple because their slot was a live
sibling's (the `<short>_clash` counter; None: not known).
And `subflows_reaped`: the subflows the program itself took out of their connection because their
socket went away without `.release` (`ctl_dead`, nodes/congestion/bpf/ctl_cc.h: the kernel frees a
few subflows that way under churn; the program finds them when a socket starts or stops running it).
For MCubic and its variants, and cubic314, it reports `hystart_exits`: how often the program's own HyStart ended
slow start, by detector ({"ack_train": n, "delay": n}; the kernel's TcpExtTCPHystart* counters
count only its Cubic), and `holders_seen`: every holder the program had from its registration on
(each entry keeps the list), i.e. whose connections those counters may count. (A holder that a
hostctl of an older ctl added is taken into the list only when this one next loads or unloads it.)
When `conns_left` is above zero it also reports `leftovers`: the entries (token, count of linked
subflows, each used slot's writer token, subflow id, cwnd, RTT), how many subflows of the whole
kernel are linked to an entry (`linked_subflows`, the program's own count: 0 means no subflow
holds the entries, a phantom), how many sockets of this host's network namespace still run the
algorithm, by TCP state, and which of the entries' tokens an MPTCP socket of this namespace, or
of a named network namespace of this kernel (a virtual rack's other hosts), still has (`ss`): a
connection still closing, not a phantom.

The last holder unregisters a program only once no socket runs it. The kernel lets a struct_ops
map be unregistered while sockets still run it: the name goes at once, and the program stays in
the kernel (`bpftool struct_ops show`) until the last of those sockets is released, which for a
socket that never is (a subflow freed without `.release`) is until a reboot; a second unregister
of it fails (EINPROGRESS). Sockets run it after their holder left (a rack's connections still
closing, another host of the same run on one kernel whose own unload said `not-held`), and a
namespace whose default congestion control it is gives it to every new socket there. So the last
holder, without the lock (another rack may load meanwhile), waits up to USERS_WAIT_S until no
socket of this namespace or of a named one (/run/netns) runs it and no such namespace has it as
its default; then, under the lock, it unregisters unless someone joined meanwhile (then it only
leaves). At the limit it unregisters anyway (nothing new can select it; keeping the hold would
leave it registered with nobody to take it back) and says what still holds it (`in_use`,
`warning`). Afterwards it waits up to FREE_WAIT_S for the kernel to free the program; one still
there is `lingering` (sockets ss cannot see: another unnamed namespace, or a leak), also in the
warning. The answer says how long it waited (`waited_s`).

    probe                          kernel, BTF, bpftool, available/allowed, what ctl holds, which BBR
                                   the kernel's `bbr` is (/sys/module/tcp_bbr/version: "3" in
                                   Google's BBRv3 tree, absent upstream, where it is v1)
    load NAME SHA256 OBJECT HOLDER register or share NAME (OBJECT must have that sha256)
    unload NAME HOLDER [WAIT_S]    leave NAME; unregister when no holder is left, once no socket runs it
                                   (waits up to WAIT_S, default USERS_WAIT_S; see below)
    put SHA256 PATH                store a base64 object read from stdin at PATH (checked)
"""
from __future__ import annotations

import base64
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time

DIR = "/run/ctl-cc"
CONNS_WAIT_S = 15.0    # a closed connection drains its send buffer first (seconds on a slow, long path)
# The last holder's wait for sockets still running a program: a previous run's sender drains its
# buffer for up to a minute at 800 ms (controller/run/drain.py); this is within the driver's 60 s
# command timeout together with CONNS_WAIT_S and FREE_WAIT_S, and a run's own sockets are closed
# before its restore, so it normally waits for a peer's few closing sockets, not a whole buffer.
USERS_WAIT_S = 30.0
FREE_WAIT_S = 10.0     # after unregistering: the kernel frees the map once the last socket lets go
EXTRA_WAIT_S = 15.0    # the coupling map's and the kernel's waits together, after the sockets' (30 + 15 < 60)
POLL_S = 0.5
CLONE_NEWNET = 0x40000000     # <sched.h>
HOLDERS = DIR + "/holders.json"
ALLOWED = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
AVAILABLE = "/proc/sys/net/ipv4/tcp_available_congestion_control"
BTF = "/sys/kernel/btf/vmlinux"
BBR_VERSION = "/sys/module/tcp_bbr/version"


def _out(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc, sort_keys=True) + "\n")


def _fail(msg: str, code: int = 1) -> None:
    _out({"ok": False, "error": msg})
    sys.exit(code)


def _private_dir() -> None:
    try:
        os.mkdir(DIR, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(DIR)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        _fail(f"refusing {DIR}: not a directory of uid {os.geteuid()} closed to others")


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _bpftool() -> str | None:
    return shutil.which("bpftool") or ("/usr/sbin/bpftool" if os.path.exists("/usr/sbin/bpftool") else None)


def _registered() -> dict[str, int]:
    """tcp_congestion_ops struct_ops maps: map name (the object's variable) -> id. The name the
    kernel registers (`.name`) may differ; ctl keys its entries by that name and the map id."""
    return dict(_struct_ops_maps())


def _registered_ids() -> set[int]:
    """The ids of every tcp_congestion_ops struct_ops map: two objects may have maps of one name (a
    trace build and the plain build of one source: both `cubic314`), which _registered() keeps one of."""
    return {i for _, i in _struct_ops_maps()}


def _struct_ops_maps() -> list[tuple[str, int]]:
    """(map name, id) of each tcp_congestion_ops struct_ops map."""
    tool = _bpftool()
    if tool is None:
        return []
    p = subprocess.run([tool, "-j", "struct_ops", "show"], capture_output=True, text=True)
    out: list[tuple[str, int]] = []
    for line in p.stdout.splitlines():   # one JSON object per struct_ops map
        line = line.strip()
        if not line:
            continue
        try:
            docs = json.loads(line)
        except ValueError:
            continue
        for d in docs if isinstance(docs, list) else [docs]:
            if d.get("kernel_struct_ops") == "tcp_congestion_ops":
                out.append((str(d.get("name")), int(d.get("id"))))
    return out


def _bpftool_json(*args: str):
    tool = _bpftool()
    if tool is None:
        return None
    p = subprocess.run([tool, "-j", *args], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


def _maps_of(struct_ops_id: int) -> dict[str, int]:
    """The maps the programs of one struct_ops map use: name -> id (from the kernel's own
    references: struct_ops -> prog ids -> map ids)."""
    tool = _bpftool()
    if tool is None:
        return {}
    # read as text: bpftool 7.1 prints `dump id N` as objects separated by commas, not one JSON document
    p = subprocess.run([tool, "-j", "struct_ops", "dump", "id", str(struct_ops_id)], capture_output=True, text=True)
    progs = sorted({int(x) for x in re.findall(r"prog_id:(\d+)", p.stdout)}) if p.returncode == 0 else []
    out: dict[str, int] = {}
    for pid in progs:
        prog = _bpftool_json("prog", "show", "id", str(pid)) or {}
        for mid in prog.get("map_ids", []) if isinstance(prog, dict) else []:
            m = _bpftool_json("map", "show", "id", str(mid)) or {}
            if isinstance(m, dict) and m.get("name"):
                out[str(m["name"])] = int(mid)
    return out


def _conns_map(maps: dict[str, int]) -> int | None:
    ids = [i for n, i in maps.items() if n.endswith("_conns")]
    return ids[0] if len(ids) == 1 else None


def _clash_map(maps: dict[str, int]) -> int | None:
    ids = [i for n, i in maps.items() if n.endswith("_clash")]
    return ids[0] if len(ids) == 1 else None


def _counter(map_id: int | None) -> int | None:
    """The one u32 of a one-entry array map (bpftool prints it as a number with BTF, as bytes without)."""
    if map_id is None:
        return None
    doc = _bpftool_json("map", "dump", "id", str(map_id))
    if not isinstance(doc, list) or len(doc) != 1 or not isinstance(doc[0], dict):
        return None
    entry = doc[0].get("formatted") if isinstance(doc[0].get("formatted"), dict) else doc[0]
    v = entry.get("value")
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, list) and len(v) == 4 and all(isinstance(b, str) for b in v):
        try:
            return int.from_bytes(bytes(int(b, 16) for b in v), "little")
        except ValueError:
            return None
    return None


def _count_entries(map_id: int) -> int | None:
    doc = _bpftool_json("map", "dump", "id", str(map_id))
    return len(doc) if isinstance(doc, list) else None


def _poke(name: str) -> None:
    """Make the program look for subflows gone without `.release` now: a TCP socket that selects
    the algorithm and closes runs its `.release` (tcp_v4_destroy_sock), which drops every linked
    subflow whose socket the kernel freed (nodes/congestion/bpf/ctl_cc.h, ctl_reap_all). The
    socket never connects; nothing else changes."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode())
    except OSError:
        pass


def _conns_left(map_id: int | None, wait_s: float = CONNS_WAIT_S, name: str | None = None) -> int | None:
    """Entries in the coupling map, after waiting up to wait_s for it to empty (None: unknown);
    with `name`, the program (registered under that name) is poked before every count."""
    if map_id is None:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        if name is not None:
            _poke(name)
        n = _count_entries(map_id)
        if not n or time.monotonic() >= deadline:
            return n
        time.sleep(0.1)


def _int(x) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def entry_summary(elem) -> dict | None:
    """One element of `bpftool -j map dump` of a coupling map (struct ctl_conn, formatted from the
    map's BTF) as the diagnosis needs it: its token, its count of linked subflows and every slot
    that holds a value (index, the token of the subflow that wrote it, its subflow id, cwnd in
    packets, RTT in us, aux). None for an element that does not have that shape (pure)."""
    if not isinstance(elem, dict):
        return None
    fmt = elem.get("formatted") if isinstance(elem.get("formatted"), dict) else elem
    val = fmt.get("value")
    if not isinstance(val, dict) or not isinstance(val.get("s"), list):
        return None
    slots = []
    for i, s in enumerate(val["s"][:64]):
        if not isinstance(s, dict):
            return None
        # never `sk` (a kernel address: the program compares it, nobody else needs it)
        slot = {str(k): _int(v) for k, v in list(s.items())[:8] if k != "sk" and _int(v) is not None}
        if any(slot.values()):
            slots.append({"slot": i, **slot})
    key = _int(fmt.get("key"))
    return {"key": f"{key:#x}" if key is not None else None, "token": _int(val.get("token")),
            "nactive": _int(val.get("nactive")), "slots": slots}


def _entries(map_id: int | None, limit: int = 16) -> list[dict] | None:
    """The first `limit` entries of the coupling map, summarised (None: not readable)."""
    if map_id is None:
        return None
    doc = _bpftool_json("map", "dump", "id", str(map_id))
    if not isinstance(doc, list):
        return None
    return [e for e in (entry_summary(x) for x in doc[:limit]) if e is not None]


def sockets_on(ss_out: str, name: str) -> dict[str, int]:
    """From `ss -tinaH` (one namespace): how many TCP sockets (MPTCP subflows are among them) run
    congestion control NAME, by state (pure). ss prints a socket's line, then its details on a
    line that starts with white space, the congestion control first."""
    out: dict[str, int] = {}
    state = None
    for line in ss_out.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            state = line.split(None, 1)[0]
            continue
        words = line.split()
        if state is not None and words and words[0] == name:
            out[state] = out.get(state, 0) + 1
            state = None
    return out


def find_var(doc, name: str) -> int | None:
    """The value of global variable NAME in `bpftool -j map dump` of a program's .bss map (the
    formatted datasec, wherever it nests it) (pure)."""
    stack = [doc]
    while stack:
        d = stack.pop()
        if isinstance(d, dict):
            if name in d and _int(d[name]) is not None:
                return d[name]
            stack.extend(d.values())
        elif isinstance(d, list):
            stack.extend(d)
    return None


def _bss_var(struct_ops_id: int, name: str) -> int | None:
    """Global variable NAME of the program (its .bss map, found through the program's own maps)."""
    ids = [i for n, i in _maps_of(struct_ops_id).items() if n.endswith(".bss")]
    if len(ids) != 1:
        return None
    return _int(find_var(_bpftool_json("map", "dump", "id", str(ids[0])), name))


def _linked(struct_ops_id: int) -> int | None:
    """ctl_linked of the program (ctl_cc.h): subflows of the whole kernel linked to an entry now."""
    return _bss_var(struct_ops_id, "ctl_linked")


def _reaped(struct_ops_id: int) -> int | None:
    """ctl_dead of the program (ctl_cc.h): subflows it took out of their connection because their
    socket went away without `.release` (the kernel's doing; None: not known)."""
    return _bss_var(struct_ops_id, "ctl_dead")


def _hystart_exits(struct_ops_id: int) -> dict | None:
    """A program's own HyStart exits (mcubic.bpf.c, cubic314.bpf.c: ctl_hystart_train, ctl_hystart_delay): how often
    its ACK-train and its delay detector ended slow start, over every socket that ran it; None for
    a program without them."""
    train, delay = _bss_var(struct_ops_id, "ctl_hystart_train"), _bss_var(struct_ops_id, "ctl_hystart_delay")
    if train is None or delay is None:
        return None
    return {"ack_train": train, "delay": delay}


def mptcp_tokens(ss_out: str) -> set[int]:
    """The tokens of the MPTCP sockets in `ss -MinaH` (one namespace; `token:` in hex) (pure)."""
    return {int(m.group(1), 16) for m in re.finditer(r"(?<![\w])token:([0-9a-f]{1,8})\b", ss_out)}


def _alive_here(entries: list[dict] | None) -> list[int] | None:
    """Which of the entries' tokens an MPTCP socket of this namespace still has (a connection
    still closing, not a phantom), from `ss -MinaH`."""
    ss = shutil.which("ss")
    if ss is None or entries is None:
        return None
    p = subprocess.run([ss, "-MinaH"], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    live = mptcp_tokens(p.stdout)
    return sorted(e["token"] for e in entries if e.get("token") in live)


def _alive_in_named_namespaces(entries: list[dict] | None, limit: int = 256) -> dict[str, list[int]] | None:
    """On a kernel shared by several hosts (a virtual rack's namespaces, /run/netns): which of the
    entries' tokens an MPTCP socket of each named network namespace still has (read-only `ss`)."""
    ip, ss = shutil.which("ip"), shutil.which("ss")
    if ip is None or ss is None or entries is None:
        return None
    try:
        names = sorted(n for n in os.listdir("/run/netns") if re.fullmatch(r"[\w.-]{1,64}", n))[:limit]
    except OSError:
        return {}
    wanted = {e.get("token") for e in entries}
    out: dict[str, list[int]] = {}
    for n in names:
        p = subprocess.run([ip, "netns", "exec", n, ss, "-MinaH"], capture_output=True, text=True)
        alive = sorted(t for t in mptcp_tokens(p.stdout) if t in wanted) if p.returncode == 0 else []
        if alive:
            out[n] = alive
    return out


def _sockets_here(name: str) -> dict[str, int] | None:
    """Sockets of this network namespace (the host's own; not the kernel's others) running NAME."""
    ss = shutil.which("ss")
    if ss is None:
        return None
    p = subprocess.run([ss, "-tinaH"], capture_output=True, text=True)
    return sockets_on(p.stdout, name) if p.returncode == 0 else None


def _named_netns() -> list[tuple[str, str]]:
    """(label, path) of each named network namespace of this kernel that is not this one
    (/run/netns: a virtual rack's hosts)."""
    try:
        here = os.stat("/proc/self/ns/net")
        names = sorted(n for n in os.listdir("/run/netns") if re.fullmatch(r"[\w.-]{1,64}", n))[:256]
    except OSError:
        return []
    out = []
    for n in names:
        try:
            st = os.stat("/run/netns/" + n)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) != (here.st_dev, here.st_ino):
            out.append((f"netns {n}", "/run/netns/" + n))
    return out


def _users_here(name: str) -> dict[str, int]:
    """Sockets of the current network namespace running NAME, by state, and {"default": 1} when it
    is the namespace's default congestion control (ss failing: sockets not counted)."""
    found: dict[str, int] = dict(_sockets_here(name) or {})
    if _read("/proc/sys/net/ipv4/tcp_congestion_control") == name:
        found["default"] = 1
    return found


def _users(name: str) -> dict[str, dict[str, int]]:
    """Who still runs NAME, where ss can see: label -> {TCP state: sockets, "default": 1}, for this
    namespace and each named one (entered with setns(2) through ctypes, and left again: `ip netns
    exec` costs a mount namespace and 60 ms per namespace, this a few)."""
    out: dict[str, dict[str, int]] = {}
    here_users = _users_here(name)
    if here_users:
        out["this namespace"] = here_users
    named = _named_netns()
    if not named:
        return out
    libc = ctypes.CDLL(None, use_errno=True)
    here = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        for label, path in named:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    continue
                try:
                    found = _users_here(name)
                finally:
                    if libc.setns(here, CLONE_NEWNET) != 0:
                        _fail(f"could not return to this network namespace from {label}")
            finally:
                os.close(fd)
            if found:
                out[label] = found
    finally:
        os.close(here)
    return out


def users_text(name: str, users: dict[str, dict[str, int]]) -> str:
    """One line naming what still runs NAME (pure): '3 sockets and 1 namespace default: netns a1:
    FIN-WAIT-1 2, ESTAB 1; netns b2: default congestion control'."""
    socks = sum(n for u in users.values() for k, n in u.items() if k != "default")
    defaults = sum(1 for u in users.values() if u.get("default"))
    parts = []
    for label in sorted(users):
        u = users[label]
        bits = [f"{k} {n}" for k, n in sorted(u.items()) if k != "default"]
        if u.get("default"):
            bits.append("default congestion control")
        parts.append(f"{label}: {', '.join(bits)}")
    counts = [f"{socks} socket{'' if socks == 1 else 's'}"] if socks else []
    if defaults:
        counts.append(f"{defaults} namespace default{'' if defaults == 1 else 's'}")
    return f"{name} is still run by {' and '.join(counts) or 'nothing ss can see'}: {'; '.join(parts)}"


def _others_joined(name: str, holder: str) -> bool:
    """Whether a holder other than HOLDER holds NAME now (holders.json is replaced whole: readable unlocked)."""
    try:
        with open(HOLDERS) as f:
            entry = json.load(f).get(name) or {}
    except (OSError, ValueError, AttributeError):
        return False
    return bool(set(entry.get("holders") or ()) - {holder})


def _wait_unused(name: str, holder: str, wait_s: float) -> tuple[dict[str, dict[str, int]], float]:
    """Wait up to wait_s until nothing ss can see runs NAME (or another holder joined: it is then
    not ours to unregister). Returns (what still ran it at the end, seconds waited)."""
    t0 = time.monotonic()
    while True:
        users = _users(name)
        waited = time.monotonic() - t0
        if not users or waited >= wait_s or _others_joined(name, holder):
            return users, round(waited, 1)
        time.sleep(POLL_S)


def _wait_freed(struct_ops_id: int, wait_s: float) -> bool:
    """Wait up to wait_s until the kernel has freed struct_ops map STRUCT_OPS_ID (its last socket
    let go of it); whether it has."""
    deadline = time.monotonic() + wait_s
    while struct_ops_id in _registered_ids():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _left(deadline: float, at_most: float) -> float:
    """Seconds a wait may take: at most `at_most`, and none past `deadline` (monotonic)."""
    return max(0.0, min(at_most, deadline - time.monotonic()))


def wait_arg(text: str | None) -> float:
    """unload's optional WAIT_S (seconds, 0..600); the default USERS_WAIT_S when absent (pure)."""
    if text is None:
        return USERS_WAIT_S
    if not re.fullmatch(r"\d{1,3}(\.\d{1,3})?", text) or float(text) > 600:
        _fail(f"unload: WAIT_S must be seconds between 0 and 600, not {text[:20]!r}", 2)
    return float(text)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class _Holders:
    """holders.json under an exclusive flock for the life of the object."""

    def __init__(self) -> None:
        _private_dir()
        self.fd = os.open(DIR + "/lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            with open(HOLDERS) as f:
                self.doc = json.load(f)
        except (OSError, ValueError):
            self.doc = {}

    def save(self) -> None:
        tmp = HOLDERS + ".part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(self.doc, f, sort_keys=True)
        os.replace(tmp, HOLDERS)

    def close(self) -> None:
        os.close(self.fd)


def _set_allowed(names: list[str]) -> None:
    with open(ALLOWED, "w") as f:
        f.write(" ".join(names))


def _allow(name: str) -> tuple[bool, str]:
    """Add NAME to the allowed list (so a namespace default may name it). The list is
    kernel-wide and writable only from the initial network namespace: on a host that is a
    namespace (the virtual rack) it stays as it is, and per-socket selection (iperf3 -C, as
    root) still reaches every subflow. Returns (added, why not)."""
    allowed = _read(ALLOWED).split()
    if name in allowed:
        return False, "already allowed"
    try:
        _set_allowed(allowed + [name])
    except OSError as exc:
        return False, f"allowed list not writable here ({exc.strerror}): per-socket selection only"
    return True, ""


def probe() -> None:
    holders = {}
    try:
        with open(HOLDERS) as f:
            holders = json.load(f)
    except (OSError, ValueError):
        pass
    _out({"ok": True, "kernel": os.uname().release, "arch": os.uname().machine,
          "boot_id": _read("/proc/sys/kernel/random/boot_id"), "btf": os.path.exists(BTF),
          "bpftool": _bpftool(), "available": _read(AVAILABLE).split(), "allowed": _read(ALLOWED).split(),
          "registered": _registered(), "holders": holders, "bbr_version": _read(BBR_VERSION)[:16]})


def load(name: str, sha: str, obj: str, holder: str) -> None:
    h = _Holders()
    try:
        entry = h.doc.get(name)
        live_ids = _registered_ids()
        if entry is not None and entry["id"] in live_ids and name in _read(AVAILABLE).split():
            if entry["sha256"] != sha:
                _fail(f"{name} is loaded from another build (sha256 {entry['sha256'][:16]}, held by "
                      f"{', '.join(entry['holders'])}); this run has {sha[:16]}", 3)
            if holder not in entry["holders"]:
                entry["holders"].append(holder)
            _seen(entry)
            h.save()
            _out({"ok": True, "action": "shared", "name": name, "id": entry["id"], "holders": entry["holders"]})
            return
        if name in _read(AVAILABLE).split():
            _fail(f"{name} is already a congestion control of this kernel, not loaded by ctl: left alone", 3)
        if _sha256(obj) != sha:
            _fail(f"{obj}: sha256 is not {sha[:16]}")
        tool = _bpftool()
        if tool is None:
            _fail("bpftool is not installed")
        p = subprocess.run([tool, "struct_ops", "register", obj], capture_output=True, text=True)
        m = re.search(r"Registered tcp_congestion_ops (\S+) id (\d+)", p.stdout + p.stderr)
        if p.returncode != 0 or not m:
            _fail(f"bpftool struct_ops register {obj} failed: {' '.join((p.stderr or p.stdout).split())[-400:]}")
        # Saved at once: whatever fails after this, the next unload of this holder finds it.
        h.doc[name] = {"id": int(m.group(2)), "sha256": sha, "object": obj, "holders": [holder],
                       "holders_seen": [holder], "added_allowed": False}
        h.save()
        maps = _maps_of(int(m.group(2)))
        h.doc[name]["conns_map"] = _conns_map(maps)
        h.doc[name]["clash_map"] = _clash_map(maps)
        h.save()
        added, note = _allow(name)
        h.doc[name]["added_allowed"] = added
        h.save()
        _out({"ok": True, "action": "registered", "name": name, "id": int(m.group(2)), "added_allowed": added,
              "allowed_note": note, "holders": [holder], "conns_map": h.doc[name]["conns_map"]})
    finally:
        h.close()


def _seen(entry: dict) -> None:
    """Keep every current holder in the entry's `holders_seen` (absent: registered by an older hostctl,
    not known). A holder that an older hostctl added is taken in here, the next time this one runs."""
    seen = entry.get("holders_seen")
    if isinstance(seen, list):
        seen.extend(x for x in entry["holders"] if x not in seen)


def unload(name: str, holder: str, wait: str | None = None) -> None:
    wait_s = wait_arg(wait)
    # every wait of this unload ends by then: within the driver's 60 s command timeout by default
    deadline = time.monotonic() + wait_s + EXTRA_WAIT_S
    h = _Holders()
    try:
        entry = h.doc.get(name)
        if entry is None or holder not in entry["holders"]:
            _out({"ok": True, "action": "not-held", "name": name})
            return
        _seen(entry)
        if len(entry["holders"]) > 1:        # not the last: never unregisters
            entry["holders"].remove(holder)
            h.save()
            _out({"ok": True, "action": "left", "name": name, "holders": entry["holders"]})
            return
    finally:
        h.close()
    # The last holder: wait, unlocked, for the sockets still running it (see the module's docstring).
    users, waited = _wait_unused(name, holder, wait_s)
    h = _Holders()
    try:
        entry = h.doc.get(name)
        if entry is None or holder not in entry["holders"]:     # the same holder's other host did it meanwhile
            _out({"ok": True, "action": "not-held", "name": name, "waited_s": waited})
            return
        _seen(entry)
        entry["holders"].remove(holder)
        if entry["holders"]:
            h.save()
            _out({"ok": True, "action": "left", "name": name, "holders": entry["holders"], "waited_s": waited})
            return
        _unregister(h, name, holder, entry, users, waited, deadline)
    finally:
        h.close()


def _unregister(h: _Holders, name: str, holder: str, entry: dict, users: dict, waited: float,
                deadline: float) -> None:
    """The last holder's unregistration, under the lock (`entry` no longer lists `holder`)."""
    conns_left = refused = leftovers = reaped = hystart = None
    notes = []
    lingering = False
    if entry["id"] in _registered_ids():
        # checked before unregistering: the map goes with the program
        # (sockets still on it at the limit: their entries stay, no use waiting for them again)
        conns_left = _conns_left(entry.get("conns_map"), 0 if users else _left(deadline, CONNS_WAIT_S), name=name)
        refused = _counter(entry.get("clash_map"))
        reaped = _reaped(entry["id"]) if entry.get("conns_map") is not None else None
        hystart = _hystart_exits(entry["id"])
        if conns_left:
            # which case a phantom is: its slots (accounting, a subflow that never left) and
            # whether a socket still has its connection (one still closing)
            entries = _entries(entry.get("conns_map"))
            leftovers = {"entries": entries, "linked_subflows": _linked(entry["id"]),
                         "sockets_here": _sockets_here(name), "tokens_alive_here": _alive_here(entries),
                         "tokens_alive_in_netns": _alive_in_named_namespaces(entries)}
        tool = _bpftool()
        p = subprocess.run([tool or "bpftool", "struct_ops", "unregister", "id", str(entry["id"])],
                           capture_output=True, text=True)
        if p.returncode != 0:
            if name in _read(AVAILABLE).split():
                entry["holders"].append(holder)
                h.save()
                _fail(f"unregister {name} id {entry['id']} failed: {' '.join((p.stderr or p.stdout).split())[-300:]}")
            # unregistered before (a hostctl ended between unregistering and saving): the kernel
            # keeps it for its sockets and refuses a second unregister (EINPROGRESS)
            notes.append(f"id {entry['id']} was unregistered already")
        lingering = not _wait_freed(entry["id"], 0 if users else _left(deadline, FREE_WAIT_S))
    if name in _read(AVAILABLE).split():
        entry["holders"].append(holder)
        h.save()
        _fail(f"{name} is still a congestion control after unregistering id {entry['id']}")
    if entry.get("added_allowed"):
        try:
            _set_allowed([n for n in _read(ALLOWED).split() if n != name])
        except OSError as exc:
            _fail(f"unregistered {name} but could not take it off the allowed list: {exc.strerror}")
    del h.doc[name]
    h.save()
    doc = {"ok": True, "action": "unregistered", "name": name, "id": entry["id"], "conns_left": conns_left,
           "coupling_refused": refused, "subflows_reaped": reaped, "waited_s": waited, "in_use": users,
           "lingering": lingering}
    if users or lingering:
        why = [f"{users_text(name, users)} after {waited:g} s: unregistered anyway (no new socket can select it)"
               if users else ""]
        if lingering and users:
            why.append(f"the kernel keeps program id {entry['id']} for them until the last is released")
        elif lingering:
            why.append(f"the kernel still keeps program id {entry['id']} after unregistering it and waiting "
                       "(sockets ss does not see: an unnamed namespace, or one never released); it is freed with "
                       "its last socket")
        doc["warning"] = "; ".join(w for w in why + notes if w)
    elif notes:
        doc["note"] = "; ".join(notes)
    if hystart is not None:
        doc["hystart_exits"] = hystart
        # every holder the program had while loaded (whose connections its counters count);
        # null: registered by an older hostctl, not known
        doc["holders_seen"] = entry.get("holders_seen")
    if leftovers is not None:
        doc["leftovers"] = leftovers
    _out(doc)


def put(sha: str, path: str) -> None:
    data = base64.b64decode(sys.stdin.buffer.read())
    if hashlib.sha256(data).hexdigest() != sha:
        _fail("object does not match its sha256")
    _private_dir()
    objects = DIR + "/objects"
    try:
        os.mkdir(objects, 0o700)
    except FileExistsError:
        pass
    if not path.startswith(objects + "/") or "/.." in path:
        _fail(f"objects go under {objects}")
    tmp = path + ".part"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    _out({"ok": True, "action": "stored", "path": path})


def main(argv: list[str]) -> None:
    verbs = {"probe": (probe, (0,)), "load": (load, (4,)), "unload": (unload, (2, 3)), "put": (put, (2,))}
    if not argv or argv[0] not in verbs or len(argv) - 1 not in verbs[argv[0]][1]:
        _fail("usage: probe | load NAME SHA256 OBJECT HOLDER | unload NAME HOLDER [WAIT_S] | put SHA256 PATH", 2)
    fn, _n = verbs[argv[0]]
    fn(*argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
