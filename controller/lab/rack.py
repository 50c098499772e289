"""The virtual rack: network namespaces on this machine that stand in for the lab rack.

`controller.lab.plan.plan_lab(inventory)` (pure) turns a virtual inventory into the exact local
commands (argv tuples) that build the rack and the list of daemons to start. `lab_up` runs them,
starts one sshd per host (own mount and UTS namespace, clean shell start-up), the
bridges' forwarders and snmpd, and the local InfluxDB; `lab_down` removes exactly what
`lab.json` says was created, ending processes by the PIDs that were started.

After `lab up`, ctl reaches every host only over SSH on the management network, as on
the physical rack.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from controller.errors import LabError, ParameterError
from controller.inventory import Inventory, source_of
from controller.lab.access import account_files
from controller.lab.influxd import InfluxServer
from controller.lab.snmpd_conf import render_snmpd_conf
from controller.settings import state_dir
from controller.safefs import create_private, private_dir, read_private, write_private
from controller.lab import mmhost
from controller.lab.plan import Daemon, LAB_FORMAT, LabPlan, REQUIRED_TOOLS, host_dir, plan_lab, runs_modemmanager


# A secret as ctl writes one (secrets.token_urlsafe) or a person would: one line, one token of
# printable ASCII, no blanks. Anything else at a secret's path is not taken for a secret.
_TOKEN_LINE = re.compile(rb"[\x21-\x7e]{1,256}\n?")


def _secret_for(ref, what: str) -> str:
    """The value behind a SecretRef; for a file the lab itself provides, create it (0600) once.

    The file is only ever created (create_private: never over anything at its path, never
    through a symlink). An existing file is taken as the secret only if it is one token line,
    as ctl writes it; anything else -- an inventory pointing at a config file whose first line
    is blank, say -- is a one-line error naming it, and the file is left byte for byte."""
    if ref.file is None or (ref.env and os.environ.get(ref.env)):
        return ref.resolve(what)
    private_dir(ref.file.parent, "secret directory", 0o700)
    token = secrets.token_urlsafe(18)
    if create_private(ref.file, token + "\n", f"{what} file"):
        return token
    data = read_private(ref.file, f"{what} file", 4096)
    if not _TOKEN_LINE.fullmatch(data):
        raise ParameterError(f"{what}: {ref.file} exists and is not a secret (one line, one token): left as it "
                             "is; write the secret alone on its first line, or point the inventory at a file "
                             "that does not exist yet for ctl to create")
    return data.decode("ascii").strip()


def _snmp_secrets(inv: Inventory) -> dict[str, tuple[str | None, str | None, str | None, str | None]]:
    """Each SNMP host's (community, v3 user, auth key, priv key), generated where the lab
    provides them: read (or refused) before anything of the rack is built."""
    out = {}
    for h, host in sorted(inv.hosts.items()):
        s = host.snmp
        if s is None:
            continue
        community = _secret_for(s.community, f"{h} SNMP community") if s.community else None
        user = auth = priv = None
        if s.version == "3":
            user = s.user
            auth = _secret_for(s.auth_key, f"{h} SNMP auth key")
            priv = _secret_for(s.priv_key, f"{h} SNMP priv key")
        out[h] = (community, user, auth, priv)
    return out


def _write_snmpd_configs(inv: Inventory, snmp_secrets: dict) -> None:
    for h, (community, user, auth, priv) in sorted(snmp_secrets.items()):
        s = inv.hosts[h].snmp
        d = host_dir(inv, h)
        private_dir(d / "snmp", "snmpd state directory", 0o700)
        text = render_snmpd_conf(f"udp:{inv.hosts[h].mgmt.address}:{s.port}", community, user, auth, priv,
                                 auth_protocol=s.auth_protocol or "sha", priv_protocol=s.priv_protocol or "aes",
                                 sys_name=h)
        write_private(d / "snmpd.conf", text, "snmpd configuration")


# ---- execution ----------------------------------------------------------------------------

@dataclass
class LabState:
    format: int
    inventory: str
    inventory_name: str
    created: float
    namespaces: list[str]
    root_links: list[str]
    processes: list[dict]  # {name, host, pid, argv, cmdline}
    ssh_hosts: dict[str, str]
    state_dir: str = ""    # the ctl state dir that built it (its InfluxDB data and token live there)

    def to_json(self) -> dict:
        return asdict(self)


def _state_path(inv: Inventory) -> Path:
    assert inv.virtual is not None
    return inv.virtual.runtime_dir / "lab.json"


def read_state(inv: Inventory) -> LabState | None:
    p = _state_path(inv)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LabError(f"{p}: unreadable lab state: {exc}") from None
    if data.get("format") != LAB_FORMAT:
        raise LabError(f"{p}: lab state format {data.get('format')} is not {LAB_FORMAT}; run `ctl lab down`")
    return LabState(**data)


def _run_local(argv: tuple[str, ...], log: list[dict], check: bool = True) -> subprocess.CompletedProcess:
    t0 = time.time()
    env = dict(os.environ, LC_ALL="C", LANG="C")
    p = subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=60)
    log.append({"argv": list(argv), "exit_status": p.returncode, "stdout": p.stdout, "stderr": p.stderr,
                "started": t0, "duration": round(time.time() - t0, 6)})
    if check and p.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` failed (exit {p.returncode}): {' '.join(p.stderr.split())[:300]}")
    return p


def proc_start_time(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot: with the PID, a unique identity
    (survives exec, which rewrites the command line; never matches a reused PID)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] == "Z":
        return None
    return int(fields[19])


def proc_alive(pid: int, start_time: int | None = None) -> bool:
    st = proc_start_time(pid)
    return st is not None and (start_time is None or st == start_time)


def check_owner(inv: Inventory, st: LabState) -> None:
    """A virtual rack belongs to the state dir that built it: its InfluxDB's data and token
    are there. Another checkout (another state dir) with the same inventory name must not
    use it or rebuild it under the owner's feet."""
    if st.state_dir and Path(st.state_dir).resolve() != state_dir().resolve():
        raise LabError(f"virtual rack {inv.name} is up but was built by another ctl checkout (state dir "
                       f"{st.state_dir}, inventory {st.inventory or '?'}): use that checkout, or run "
                       "`ctl lab down` before using this one")


def owned_state(inv: Inventory) -> LabState | None:
    """The running rack's state (None if none), refused if another checkout built it."""
    st = read_state(inv)
    if st is not None:
        check_owner(inv, st)
    return st


def topology_intact(inv: Inventory, st: LabState | None = None) -> bool:
    """Every namespace the running rack recorded exists (its daemons may have died)."""
    st = st if st is not None else read_state(inv)
    return st is not None and bool(st.namespaces) and set(st.namespaces) <= set(_list_netns())


def is_up(inv: Inventory, st: LabState | None = None) -> bool:
    st = st if st is not None else read_state(inv)
    if st is None:
        return False
    existing = set(_list_netns())
    if not set(st.namespaces) <= existing:
        return False
    return all(proc_alive(p["pid"], p.get("start_time")) for p in st.processes)


def _netns_pids(ns: str) -> list[int]:
    p = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(x) for x in p.stdout.split()] if p.returncode == 0 else []


def _list_netns() -> list[str]:
    p = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        return []
    return [x["name"] for x in json.loads(p.stdout)]


def check_prerequisites(inv: Inventory) -> None:
    if os.geteuid() != 0:
        raise LabError("the virtual rack needs root (network namespaces, veth, sshd)")
    plan = plan_lab(inv)
    tools = REQUIRED_TOOLS + (("nft",) if any(h.nat is not None for h in inv.hosts.values()) or plan.after_start
                              else ()) + (("sudo",) if any(sudo for _u, sudo in plan.accounts.values()) else ())
    if any(runs_modemmanager(inv, h) for h in inv.hosts):
        tools += ("dbus-daemon", "ModemManager", "mmcli", mmhost.POLKITD)
    missing = [t for t in tools if shutil.which(t) is None and not Path("/usr/sbin", t).exists()]
    if missing:
        hint = " (Debian package nftables: the virtual NAT router needs it)" if "nft" in missing else ""
        if {"dbus-daemon", "ModemManager", "mmcli", mmhost.POLKITD} & set(missing):
            hint += " (Debian packages modemmanager, polkitd, dbus: the virtual modem host runs them)"
        raise LabError(f"missing tools for the virtual rack: {', '.join(missing)}{hint} (run scripts/setup.sh)")


def _ensure_keys(inv: Inventory, plan: LabPlan, log: list[dict]) -> None:
    assert inv.virtual is not None
    rt = private_dir(inv.virtual.runtime_dir, "runtime directory", 0o700)
    ssh = inv.ssh
    key = ssh.key_file or rt / "id_ed25519"
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        _run_local(("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"ctl@{inv.name}", "-f", str(key)), log)
    pub = Path(str(key) + ".pub").read_text().strip()
    write_private(rt / "authorized_keys", pub + "\n", "authorized_keys")
    lines = []
    for h, addr in plan.ssh_hosts.items():
        d = host_dir(inv, h)
        d.mkdir(parents=True, exist_ok=True)
        hk = d / "ssh_host_ed25519_key"
        if not hk.exists():
            _run_local(("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{h}.{inv.name}", "-f", str(hk)), log)
        hpub = " ".join(Path(str(hk) + ".pub").read_text().split()[:2])
        lines.append(f"{addr} {hpub}")
    known = ssh.known_hosts or rt / "known_hosts"
    known.parent.mkdir(parents=True, exist_ok=True)
    write_private(known, "\n".join(lines) + "\n", "known_hosts file", 0o644)


def _write_accounts(inv: Inventory, plan: LabPlan) -> None:
    """The files each non-root account's sshd namespace bind-mounts over /etc (see lab.access)."""
    assert inv.virtual is not None
    if not plan.accounts:
        return
    etc = {name: Path("/etc", name).read_text() for name in ("passwd", "group", "shadow", "hosts")}
    keys = (inv.virtual.runtime_dir / "authorized_keys").read_text()
    for h, (user, sudo) in plan.accounts.items():
        d = private_dir(host_dir(inv, h) / "account", "account files", 0o700)
        files = account_files(h, user, sudo, etc, with_sudoers=Path("/etc/sudoers").exists())
        for name, text in files.items():
            write_private(d / name, text, f"{h} account {name}",
                          {"shadow": 0o600, "sudoers": 0o440}.get(name, 0o644))
        write_private(d / "authorized_keys", keys, f"{h} account authorized_keys", 0o644)


def _wait_tcp(addr: str, port: int, deadline: float) -> bool:
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((addr, port), timeout=0.5) as s:
                s.settimeout(0.5)
                if s.recv(4).startswith(b"SSH-"):
                    return True
        except OSError:
            time.sleep(0.05)
    return False


def lab_up(inv: Inventory, *, dnpipe_binary: str | None = None, extra_daemons=None) -> LabState:
    """Build the virtual rack. Idempotent: an intact running rack is left alone."""
    check_prerequisites(inv)
    assert inv.virtual is not None
    st = owned_state(inv)
    if st is not None and is_up(inv, st):
        return st
    if st is not None and st.namespaces:
        missing = sorted(set(plan_lab(inv).namespaces) - set(st.namespaces))
        if missing:
            # Built from an older inventory and now broken: repairing would bring back the old
            # topology and rebuilding would cut whatever still runs on it, so say what to do.
            # (An intact older rack stays "up": what it has keeps working.)
            raise LabError(f"virtual rack {inv.name} was built from another version of its inventory "
                           f"(no host {', '.join(m.removeprefix(inv.virtual.netns_prefix + '-') for m in missing)}): "
                           "run `ctl lab down` and `ctl lab up`")
    if st is not None and topology_intact(inv, st):
        return repair(inv, st)  # the topology is intact: restart only what died (e.g. InfluxDB)
    snmp_secrets = _snmp_secrets(inv)   # a secret file that is not one is refused before anything changes
    if st is not None or any(ns in _list_netns() for ns in plan_lab(inv).namespaces):
        lab_down(inv)  # a half-built or broken rack: remove what it recorded, then rebuild
    plan = plan_lab(inv, dnpipe_binary=dnpipe_binary)
    log: list[dict] = []
    state = LabState(LAB_FORMAT, str(source_of(inv) or ""), inv.name, time.time(), [], [], [], plan.ssh_hosts,
                     str(state_dir().resolve()))
    private_dir(inv.virtual.runtime_dir, "runtime directory", 0o700)
    try:
        _ensure_keys(inv, plan, log)
        for path, content in plan.files.items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(content)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        for argv in plan.commands:
            if argv[:3] == ("ip", "netns", "add"):
                state.namespaces.append(argv[3])
            _run_local(argv, log)
            _save_state(inv, state)
        state.root_links = plan.root_links
        for h in inv.hosts:
            host = inv.hosts[h]
            if host.shaper is not None and host.shaper.kind == "dnpipe":
                host.shaper.control_dir.mkdir(parents=True, exist_ok=True)
        _write_snmpd_configs(inv, snmp_secrets)
        _write_accounts(inv, plan)
        for d in list(plan.daemons) + list(extra_daemons or []):
            state.processes.append(_start_daemon(d))
            _save_state(inv, state)
        deadline = time.monotonic() + 10
        for h, addr in plan.ssh_hosts.items():
            if not _wait_tcp(addr, 22, deadline):
                raise LabError(f"sshd of {h} is not answering on {addr}:22 (see {host_dir(inv, h) / 'sshd.log'})")
        for d in plan.daemons:
            if d.name.startswith("dnpipe-"):
                _wait_dnpipe(inv, d, deadline)
        for argv in plan.after_start:
            _run_local(argv, log)
        server = managed_influx(inv)
        if server is not None:
            if not server.health():
                proc = server.start()
                state.processes.append({"name": "influxd", "host": "(controller)", "pid": proc.pid,
                                        "argv": list(proc.args), "start_time": proc_start_time(proc.pid)})
                _save_state(inv, state)
            server.setup()
    except BaseException:
        _write_log(inv, log)
        _save_state(inv, state)
        raise
    _write_log(inv, log)
    _save_state(inv, state)
    return state


def repair(inv: Inventory, st: LabState) -> LabState:
    """Restart the rack's daemons that died (same argv, same data), leaving the rest alone."""
    for i, p in enumerate(st.processes):
        if proc_alive(p["pid"], p.get("start_time")):
            continue
        if p["name"] == "influxd":
            server = managed_influx(inv)
            assert server is not None
            if not server.health():
                proc = server.start()
                st.processes[i] = {**p, "pid": proc.pid, "start_time": proc_start_time(proc.pid)}
        else:
            log = p.get("log") or str(host_dir(inv, p["host"]) / f"{p['name']}.log")
            d = Daemon(p["name"], p["host"], tuple(p["argv"]), log, tuple(sorted((p.get("env") or {}).items())))
            st.processes[i] = {**_start_daemon(d), "log": log}
        _save_state(inv, st)
    server = managed_influx(inv)
    if server is not None:
        server.setup()
    return st


def _wait_dnpipe(inv: Inventory, d: Daemon, deadline: float) -> None:
    sock = Path(d.argv[d.argv.index("--control") + 1])
    while time.monotonic() < deadline:
        if sock.exists():
            return
        time.sleep(0.02)
    raise LabError(f"dnpipe for {d.name} on {d.host} did not create {sock} (see {d.log})")


def _start_daemon(d: Daemon) -> dict:
    Path(d.log).parent.mkdir(parents=True, exist_ok=True)
    with open(d.log, "ab") as logf:
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C",
               "HOME": "/root", **dict(d.env)}
        p = subprocess.Popen(list(d.argv), stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env,
                             start_new_session=True)
    time.sleep(0.01)
    if p.poll() is not None:
        raise LabError(f"{d.name} on {d.host} exited at once (status {p.returncode}); see {d.log}")
    # `ip netns exec` execs its command, so the PID stays the daemon's (sshd -D, dnpipe run).
    return {"name": d.name, "host": d.host, "pid": p.pid, "argv": list(d.argv),
            "start_time": proc_start_time(p.pid), "log": d.log, "env": dict(d.env)}


def _save_state(inv: Inventory, state: LabState) -> None:
    p = _state_path(inv)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=1))
    os.replace(tmp, p)


def _write_log(inv: Inventory, log: list[dict]) -> None:
    assert inv.virtual is not None
    with open(inv.virtual.runtime_dir / "lab-commands.jsonl", "a") as f:
        for entry in log:
            f.write(json.dumps(entry) + "\n")


def _stop_pid(pid: int, start_time: int | None, timeout: float = 3.0) -> None:
    if not proc_alive(pid, start_time):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc_alive(pid, start_time):
            break
        time.sleep(0.02)
    else:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def lab_down(inv: Inventory) -> list[str]:
    """Remove exactly what lab.json recorded; returns what was removed."""
    if inv.virtual is None:
        raise LabError(f"inventory {inv.name} is not a virtual rack")
    return lab_down_runtime(inv.virtual.runtime_dir)


def lab_down_runtime(runtime_dir: Path) -> list[str]:
    """`lab down` from the runtime dir alone (its lab.json says what was created)."""
    state_file = runtime_dir / "lab.json"
    try:
        data = json.loads(state_file.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise LabError(f"{state_file}: unreadable lab state: {exc}") from None
    st = LabState(**data)
    removed: list[str] = []
    log: list[dict] = []
    for p in reversed(st.processes):
        if proc_alive(p["pid"], p.get("start_time")):
            _stop_pid(p["pid"], p.get("start_time"))
            removed.append(f"process {p['name']}@{p['host']} pid {p['pid']}")
    existing = set(_list_netns())
    for ns in st.namespaces:
        if ns in existing:
            # Whatever still runs inside one of our hosts (e.g. traffic of a run whose controller
            # was killed) is ended by its PID before the namespace goes: a process in a deleted
            # namespace would spin on without a network.
            for pid in _netns_pids(ns):
                _stop_pid(pid, proc_start_time(pid))
                removed.append(f"process {pid} in {ns}")
            _run_local(("ip", "netns", "del", ns), log, check=False)
            removed.append(f"netns {ns}")
    for link in st.root_links:
        if Path(f"/sys/class/net/{link}").exists():
            _run_local(("ip", "link", "del", link), log, check=False)
            removed.append(f"link {link}")
    with open(runtime_dir / "lab-commands.jsonl", "a") as f:
        for entry in log:
            f.write(json.dumps(entry) + "\n")
    state_file.unlink(missing_ok=True)
    return removed


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def managed_influx(inv: Inventory):
    """The InfluxDB server ctl runs for this inventory, or None when it is not ctl's to run."""
    if inv.influxdb is None or not inv.influxdb.managed:
        return None
    data_dir = state_dir() / "influxdb" / inv.name
    token_file = inv.influxdb.token.file or data_dir / "token"
    return InfluxServer(inv.influxdb.url, inv.influxdb.org, inv.influxdb.bucket, data_dir, token_file)
