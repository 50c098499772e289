"""A virtual rack for the integration tests, separate from a developer's own.

It is the shipped inventory/virtual.yaml with its own namespace prefix, management
subnet, runtime dir, InfluxDB port and state dir, so tests never touch a rack someone is
using. Everything is real: namespaces, one sshd per host, InfluxDB, iperf3, MPTCP.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import yaml

PROJECT = Path(__file__).resolve().parents[2]


@dataclass
class TestRack:
    inventory_path: Path
    state_dir: Path
    runs_dir: Path
    prefix: str
    inventory: object
    started: list = field(default_factory=list)   # ctl processes from popen(), ended after each test

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("CTL_INFLUX_TOKEN",)}
        env.update(CTL_STATE_DIR=str(self.state_dir), CTL_INVENTORY=str(self.inventory_path),
                   CTL_RUNS_DIR=str(self.runs_dir), PYTHONUNBUFFERED="1")
        env.update(extra)
        return env

    def ctl(self, *args: str, timeout: float = 300, env_extra: dict[str, str] | None = None,
            **kw) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "controller", *args], cwd=PROJECT, env=self.env(**(env_extra or {})),
                              capture_output=True, text=True, timeout=timeout, **kw)

    def submit(self, campaign: Path) -> dict:
        """`ctl campaign submit FILE --json` on this rack; its data (num, ...), asserting it was accepted."""
        p = self.ctl("campaign", "submit", str(campaign), "--json")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["data"]

    def popen(self, *args: str, **kw) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-m", "controller", *args], cwd=PROJECT, env=self.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
        self.started.append(p)
        return p

    def end_started(self) -> list[str]:
        """Stop what a test started and left running (it failed before waiting for it): SIGINT
        first, so the controller restores the rack and frees its lock for the next test."""
        left = []
        for p in self.started:
            if p.poll() is None:
                left.append(" ".join(p.args[3:]))
                p.send_signal(signal.SIGINT)
                try:
                    p.communicate(timeout=90)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.communicate()
        self.started.clear()
        return left

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def netns(self, host: str, *argv: str) -> str:
        p = subprocess.run(["ip", "netns", "exec", self.ns(host), *argv], capture_output=True, text=True,
                           check=True, timeout=30)
        return p.stdout

    def qdiscs(self, host: str, dev: str) -> list[dict]:
        return json.loads(self.netns(host, "tc", "-j", "qdisc", "show", "dev", dev))

    def pipe(self, link: str) -> dict:
        """The link's forwarder state read straight from its control socket (not through ctl):
        {"forward": config, "reverse": config}."""
        sock = Path("/run/ctl") / self.prefix / "dnpipe" / f"{link}.sock"
        out = subprocess.run([str(self.state_dir / "bin" / "dnpipe"), "ctl", "--control", str(sock), "show"],
                             capture_output=True, text=True, check=True, timeout=30).stdout
        return {d: v["config"] for d, v in json.loads(out)["pipes"].items()}

    def set_pipe(self, link: str, *args: str) -> None:
        """Change a forwarder behind ctl's back (e.g. a bridge someone left shaped)."""
        sock = Path("/run/ctl") / self.prefix / "dnpipe" / f"{link}.sock"
        subprocess.run([str(self.state_dir / "bin" / "dnpipe"), "ctl", "--control", str(sock), "set", *args],
                       capture_output=True, text=True, check=True, timeout=30)

    def pipes_at_default(self, links=("path1", "path2")) -> bool:
        default = {"bw_bps": 0, "delay_us": 0, "plr": 0, "queue_slots": 50, "queue_bytes": None}
        return all(cfg == default for l in links for cfg in self.pipe(l).values())

    def lab_state(self) -> dict:
        return json.loads((Path("/run/ctl") / self.prefix / "lab.json").read_text())


def write_test_inventory(dest: Path, *, prefix: str = "ctlt", mgmt_octet: int = 251, influx_port: int = 18086,
                         name: str = "vtest", source: Path = PROJECT / "inventory" / "virtual.yaml",
                         shaper: str | None = None, access: bool = False) -> Path:
    """`access`: reached as many labs reach a rack (see controller/lab/access.py): a1 and br2 log in
    as the account `ctl` with `sudo -n`, b2 only through the bastion at .2 of the management net."""
    data = yaml.safe_load(source.read_text())
    data["name"] = name
    v = data["virtual"]
    v["netns_prefix"] = prefix
    v["mgmt_bridge"] = f"{prefix}-mgmt"
    v["mgmt_address"] = v["mgmt_address"].replace("10.250.0.", f"10.{mgmt_octet}.0.")
    v["runtime_dir"] = f"/run/ctl/{prefix}"
    v["influxdb_port"] = influx_port
    data["ssh"]["key_file"] = f"/run/ctl/{prefix}/id_ed25519"
    data["ssh"]["known_hosts"] = f"/run/ctl/{prefix}/known_hosts"
    data["influxdb"]["url"] = f"http://10.{mgmt_octet}.0.1:{influx_port}"
    data["influxdb"]["token"] = {"env": "CTL_INFLUX_TOKEN", "file": "${CTL_STATE_DIR}/influxdb/" + name + "/token"}
    for host in data["hosts"].values():
        host["mgmt"]["address"] = host["mgmt"]["address"].replace("10.250.0.", f"10.{mgmt_octet}.0.")
        if shaper is not None and host.get("role") == "bridge":
            host["shaper"] = {"kind": shaper} if shaper != "dnpipe" else {
                "kind": "dnpipe", "binary": "${CTL_STATE_DIR}/bin/dnpipe", "control_dir": f"/run/ctl/{prefix}/dnpipe"}
        sh = host.get("shaper") or {}
        if sh.get("kind") == "dnpipe":
            sh["control_dir"] = f"/run/ctl/{prefix}/dnpipe"
    if access:
        v["bastion"] = f"10.{mgmt_octet}.0.2"
        for h in ("a1", "br2"):
            data["hosts"][h]["ssh"] = {"user": "ctl", "sudo": True}
        data["hosts"]["b2"]["ssh"] = {"proxy_jump": f"root@10.{mgmt_octet}.0.2"}
    text = yaml.safe_dump(data, sort_keys=False)
    # every other runtime path (e.g. the SNMP key files) moves to this rack's runtime dir
    text = text.replace("/run/ctl/ctlv/", f"/run/ctl/{prefix}/")
    dest.write_text(text)
    return dest


def make_state_dir(path: Path) -> Path:
    """A fresh state dir that shares the project's built binaries (InfluxDB takes minutes to build)."""
    path.mkdir(parents=True, exist_ok=True)
    project_bin = Path(os.environ.get("CTL_PROJECT_STATE", PROJECT / ".state")) / "bin"
    if not (path / "bin").exists():
        (path / "bin").symlink_to(project_bin)
    return path


BUILD_LOCK_DIR = Path("/run/lock/ctl-tests")


@contextmanager
def rack_build_lock() -> Iterator[None]:
    """Held while a test rack chooses its management subnet and is built (`lab up`): racks of
    concurrent sessions, and of the xdist workers of one, then never pick the same free subnet
    (and InfluxDB port) at the same moment. An exclusive flock on a file of a root-only directory
    (ctl's own checks: not a symlink, a FIFO or someone else's); released when the process dies."""
    from controller.safefs import open_private, private_dir
    private_dir(BUILD_LOCK_DIR, "test rack lock directory", 0o700)
    fd = open_private(BUILD_LOCK_DIR / "build.lock", os.O_RDWR | os.O_CREAT, "test rack build lock", 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def free_mgmt_octet() -> int:
    """A 10.X.0.0/24 management subnet no interface of this machine uses (X in 100..199)."""
    used = set()
    out = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True, check=True).stdout
    for link in json.loads(out):
        for a in link.get("addr_info", []):
            parts = a.get("local", "").split(".")
            if len(parts) == 4 and parts[0] == "10":
                used.add(int(parts[1]))
    start = 100 + os.getpid() % 100
    for i in range(100):
        octet = 100 + (start - 100 + i) % 100
        if octet not in used:
            return octet
    raise RuntimeError("no free 10.X.0.0/24 management subnet for a test rack")


def sweep_stale_test_racks() -> None:
    """Remove test racks whose pytest process died without tearing them down (kill -9)."""
    from controller.lab.rack import lab_down_runtime
    base = Path("/run/ctl")
    if not base.exists():
        return
    for d in base.iterdir():
        name = d.name
        if len(name) == 6 and name[0] in "tuw" and name[1:].isdigit() and (d / "lab.json").exists():
            owner = int(name[1:])
            if any(Path(f"/proc/{pid}").exists() for pid in _pids_with_suffix(owner)):
                continue
            lab_down_runtime(d)


def _pids_with_suffix(suffix: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and int(p.name) % 100000 == suffix
            and _is_pytest(int(p.name))]


def _is_pytest(pid: int) -> bool:
    """A pytest process, or a pytest-xdist worker: its command line is execnet's bootstrap, its
    parent the pytest that started it."""
    try:
        if b"pytest" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return True
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        return b"pytest" in Path(f"/proc/{ppid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return False


def release_cc_holds(runs_dir: Path) -> list[str]:
    """Take back the BPF congestion controls that runs of one test rack still hold (a run
    killed in a test whose recovery never came): registrations are kernel-wide, and the next
    test, or a researcher's run, must not find them. Holds of other racks' runs are left."""
    import sys
    from nodes.congestion import hostctl
    try:
        doc = json.loads(Path(hostctl.HOLDERS).read_text())
    except (OSError, ValueError):
        return []
    from tests.support.kernel_cc import run_holders
    ours = run_holders(runs_dir)      # the holder ids our runs recorded (run:<rack>/<state>/<run id>)
    released = []
    for name, entry in doc.items():
        for h in list(entry.get("holders", [])):
            if h in ours:
                subprocess.run([sys.executable, hostctl.__file__, "unload", name, h], capture_output=True)
                released.append(f"{name} ({h})")
    return released
