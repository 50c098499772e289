#!/usr/bin/env bash
# Everything ctl needs on a fresh Debian 12 machine (run as root). Idempotent: a warm run
# only checks and takes a few seconds.
#   - Debian packages: the tools the virtual rack's hosts run (sshd, iperf3, mptcpize,
#     snmpd, ethtool, ...) and the build tools;
#   - a Python virtualenv in .venv with ctl and its dependencies (pyproject.toml), at the
#     versions pinned in constraints.txt;
#   - InfluxDB 2.7.12 built from the Go module proxy into the state dir (cached);
#   - the dnpipe forwarder (C) used by the virtual rack's bridges;
#   - the Node.js BitTorrent tools used by the mptcp-bittorrent scenario (cached);
#   - the papers' congestion controls (nodes/congestion) compiled as BPF against this kernel's
#     BTF, when the kernel has BTF (cached by BTF and source digests).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=${CTL_STATE_DIR:-$ROOT/.state}
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin:$HOME/.cargo/bin:$PATH"
say() { printf 'setup: %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
    say "must run as root (network namespaces, packages)"; exit 1
fi

APT_PACKAGES=(
    openssh-server openssh-client iperf3 mptcpize ethtool iproute2 procps iputils-ping
    snmpd snmp python3 python3-venv gcc make nodejs nftables
    chromium
    systemd       # systemd-analyze: the shipped unit files are verified by the tests
    groff-base    # ctl(1), generated from the parser, is checked with groff
    man-db        # ... and read with man (man -l, man -w), as a user reads the installed page
    clang bpftool libbpf-dev linux-libc-dev   # BPF congestion controls (nodes/congestion)
    postgresql    # the lab database's tests start their own server (initdb + pg_ctl); no service is enabled
    sudo          # a virtual host may log in as a non-root account that runs ctl's commands with sudo -n
    modemmanager polkitd dbus   # the virtual modem host runs the real ModemManager (own bus, polkitd; no service enabled)
    r-base-core r-cran-readr    # the R example of docs/howto/reading-results.md runs in the tests
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    # The distribution's own sshd/snmpd/postgresql must not start: ctl runs its own, one per
    # virtual host, and the tests their own PostgreSQL.
    policy_added=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; policy_added=1
    fi
    trap '[ $policy_added = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
    # apt writes temporary files under $TMPDIR (default /tmp): on a machine whose /tmp is not
    # world-writable with the sticky bit (mode 1777) it cannot, so it gets a private one that is.
    apt_tmp=
    if [ "$(stat -c %a "${TMPDIR:-/tmp}" 2>/dev/null)" != 1777 ]; then
        apt_tmp=$(mktemp -d /root/.ctl-apt-tmp.XXXXXX); chmod 1777 "$apt_tmp"
    fi
    TMPDIR=${apt_tmp:-${TMPDIR:-/tmp}} apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    TMPDIR=${apt_tmp:-${TMPDIR:-/tmp}} DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install \
        -y -q --no-install-recommends "${missing[@]}" >/dev/null
    [ -z "$apt_tmp" ] || rm -rf "$apt_tmp"
fi

# Python: the system interpreter (3.11 on bookworm), isolated in .venv.
PY=/usr/bin/python3
stamp=.venv/.ctl-installed
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
base="$(sed -n 's/^executable = //p' .venv/pyvenv.cfg 2>/dev/null || true)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] \
        || [ "$base" != "$(readlink -f "$PY")" ]; then
    say "creating .venv and installing ctl with its dependencies"
    if [ -n "$base" ] && [ "$base" != "$(readlink -f "$PY")" ]; then
        "$PY" -m venv --clear .venv   # made by another interpreter: start afresh
    else
        "$PY" -m venv .venv
    fi
    .venv/bin/pip install -q --disable-pip-version-check --upgrade pip >/dev/null
    # constraints.txt: the exact dependency versions the test suite passed with
    .venv/bin/pip install -q --disable-pip-version-check -c constraints.txt -e '.[test]'
    echo "$want" > "$stamp"
fi
# ctl's own bytecode, written now: where PYTHONDONTWRITEBYTECODE is set (as on CI machines) every
# `ctl` start would otherwise compile each module it imports (~70 ms of CPU per start here). A
# module edited later is compiled in memory as before (its source is newer than the cache).
.venv/bin/python -m compileall -q controller nodes bridges >/dev/null

CTL_STATE_DIR=$STATE bash scripts/build-influxdb.sh

say "building the dnpipe forwarder"
make -s -C bridges/dnpipe >/dev/null
# Installed by rename: a running forwarder keeps its (old) file, the next start gets the new one.
mkdir -p "$STATE/bin"
if ! cmp -s bridges/dnpipe/build/dnpipe "$STATE/bin/dnpipe"; then
    install -m 755 bridges/dnpipe/build/dnpipe "$STATE/bin/.dnpipe.new" && mv -f "$STATE/bin/.dnpipe.new" "$STATE/bin/dnpipe"
fi

if [ -f nodes/bittorrent/package.json ]; then
    if [ ! -d nodes/bittorrent/node_modules ] || [ nodes/bittorrent/package-lock.json -nt nodes/bittorrent/node_modules ]; then
        say "installing the Node.js BitTorrent tools (npm ci)"
        (cd nodes/bittorrent && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        touch nodes/bittorrent/node_modules
    fi
fi

if [ -r /sys/kernel/btf/vmlinux ]; then
    say "building the BPF congestion controls for this kernel"
    CTL_STATE_DIR=$STATE .venv/bin/python -m nodes.congestion.build >/dev/null
else
    say "this kernel has no BTF (/sys/kernel/btf/vmlinux): runs asking for lia/olia/balia/wvegas/mcubic will be refused"
fi

say "ready (state dir: $STATE)"
