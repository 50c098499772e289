#!/usr/bin/env bash
# Build the InfluxDB OSS 2.7.12 server binary `influxd` from the Go module
# proxy and install it at $STATE/bin/influxd, where
#   STATE=${CTL_STATE_DIR:-<repo root>/.state}
#
# Idempotent: if $STATE/bin/influxd already reports version 2.7.12 the script
# exits 0 at once. Otherwise it builds in $STATE/build/influxdb (never in the
# git tree). A cold build takes a few minutes (libflux is compiled with cargo);
# the Go module/build caches and the cargo registry under $HOME make rebuilds
# take seconds.
#
# Needs: Go (/usr/local/go/bin), rustup with a `stable` toolchain
# ($HOME/.cargo/bin), a C compiler and the system pkg-config, plus access to
# the Go module proxy and crates.io.
set -euo pipefail

readonly INFLUXDB_VERSION=2.7.12
readonly INFLUXDB_MODULE=github.com/influxdata/influxdb/v2
# Release date of the v2.7.12 module (from the module proxy's .info); used as
# the build date so that rebuilds are reproducible.
readonly INFLUXDB_DATE=2025-05-20T22:58:10Z
readonly PKG_CONFIG_MODULE=github.com/influxdata/pkg-config
readonly PKG_CONFIG_VERSION=v0.2.7

log() { printf 'build-influxdb: %s\n' "$*" >&2; }
die() { printf 'build-influxdb: ERROR: %s\n' "$*" >&2; exit 1; }

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(dirname "$script_dir")
STATE=${CTL_STATE_DIR:-$repo_root/.state}
bin=$STATE/bin/influxd

# True if $1 is an influxd binary that reports version 2.7.12.
is_wanted_version() {
    local out
    [[ -x $1 ]] || return 1
    local re='(^|[^0-9.])v?2\.7\.12([^0-9]|$)'
    out=$("$1" version 2>/dev/null) || return 1
    [[ $out =~ $re ]]
}

# Fast path (warm run): nothing to do.
if is_wanted_version "$bin"; then
    log "influxd $INFLUXDB_VERSION already installed at $bin"
    exit 0
fi

# ---------------------------------------------------------------------------
# Environment: do not depend on the caller's shell.
# ---------------------------------------------------------------------------
if [[ -z ${HOME:-} ]]; then
    HOME=$(getent passwd "$(id -u)" | cut -d: -f6) || true
    [[ -n $HOME ]] || die "HOME is not set and could not be determined"
fi
export HOME

build_dir=$STATE/build/influxdb
mkdir -p "$build_dir/bin" "$build_dir/src" "$STATE/bin"
build_dir=$(cd "$build_dir" && pwd)

export PATH="$build_dir/bin:/usr/local/go/bin:$HOME/go/bin:$HOME/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export LC_ALL=C

# Native build only; variables that would redirect or break the cgo / cargo
# build are dropped (pkg-config expects cargo's output in <libflux>/target).
unset GOOS GOARCH GOARM GOBIN GOWORK GOEXPERIMENT GOENV \
      CC CXX AR CGO_CFLAGS CGO_CPPFLAGS CGO_CXXFLAGS CGO_LDFLAGS \
      PKG_CONFIG PKG_CONFIG_PATH PKG_CONFIG_LIBDIR \
      CARGO CARGO_TARGET_DIR CARGO_BUILD_TARGET CARGO_BUILD_TARGET_DIR \
      CARGO_BUILD_RUSTC_WRAPPER CARGO_BUILD_RUSTFLAGS RUSTC RUSTFLAGS \
      CARGO_ENCODED_RUSTFLAGS RUSTC_WORKSPACE_WRAPPER RUSTUP_HOME CARGO_HOME
export GO111MODULE=on
export GOTOOLCHAIN=local
export CGO_ENABLED=1
export GOFLAGS="-mod=mod -buildvcs=false"
# libflux pins an old toolchain in its rust-toolchain file; use stable instead
# (nothing can be downloaded by rustup here).
export RUSTUP_TOOLCHAIN=stable
export RUSTC_WRAPPER=$build_dir/rustc-cap-lints
# influxdata/pkg-config logs (including cargo's output on failure) only here.
export PKG_CONFIG_LOG=$build_dir/pkg-config.log

# ---------------------------------------------------------------------------
# Tool checks.
# ---------------------------------------------------------------------------
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"
command -v cargo >/dev/null || die "cargo not found (expected \$HOME/.cargo/bin/cargo from rustup)"
command -v cc >/dev/null || command -v gcc >/dev/null || die "no C compiler (apt-get install gcc libc6-dev)"
[[ -x /usr/bin/pkg-config ]] || command -v pkg-config >/dev/null \
    || die "system pkg-config not found (apt-get install pkg-config); influxdata/pkg-config wraps it"
cargo --version >/dev/null 2>&1 \
    || die "cargo does not run with RUSTUP_TOOLCHAIN=stable (is a stable rust toolchain installed? rustup toolchain list)"
log "using $(go version | cut -d' ' -f3-), $(rustc --version)"

# ---------------------------------------------------------------------------
# Serialize concurrent runs; re-check after getting the lock.
# ---------------------------------------------------------------------------
if command -v flock >/dev/null; then
    exec 9>"$build_dir/.lock"
    flock 9
    if is_wanted_version "$bin"; then
        log "influxd $INFLUXDB_VERSION was installed by a concurrent run"
        exit 0
    fi
fi

# ---------------------------------------------------------------------------
# Generated build inputs (versions are constants).
# ---------------------------------------------------------------------------
# Write $2 to file $1 only if it differs (keeps mtimes stable on reruns).
write_if_changed() {
    local file=$1 content=$2
    if [[ -f $file ]] && [[ $(cat "$file") == "$content" ]]; then
        return 0
    fi
    printf '%s\n' "$content" >"$file.tmp"
    mv -f "$file.tmp" "$file"
}

# rustc wrapper: cargo calls it as `wrapper /path/to/rustc args...`.
# libflux has #![deny(warnings)]; newer rustc versions emit new warnings.
write_if_changed "$build_dir/rustc-cap-lints" '#!/bin/sh
# Generated by scripts/build-influxdb.sh: run rustc with lints capped at warn.
rustc="$1"
shift
exec "$rustc" "$@" --cap-lints warn'
chmod 0755 "$build_dir/rustc-cap-lints"

# Wrapper module. The replace directive is copied from influxdb v2.7.12's own
# go.mod (replace directives of dependencies are not applied otherwise).
# go.mod is written fresh for each build; go.sum is kept (checksums only).
cat >"$build_dir/src/go.mod" <<EOF
module ctl.local/influxd-build

go 1.23.0

require $INFLUXDB_MODULE v$INFLUXDB_VERSION

replace github.com/nats-io/nats-streaming-server v0.11.2 => github.com/influxdata/nats-streaming-server v0.11.3-0.20201112040610-c277f7560803
EOF

# ---------------------------------------------------------------------------
# Build.
# ---------------------------------------------------------------------------
# influxdata/pkg-config must come first on PATH: cgo calls `pkg-config flux`,
# and this wrapper builds libflux with cargo, then defers to the real one.
if [[ ! -x $build_dir/bin/pkg-config ]]; then
    log "installing $PKG_CONFIG_MODULE@$PKG_CONFIG_VERSION"
    GOBIN=$build_dir/bin GOFLAGS=-buildvcs=false \
        go install "$PKG_CONFIG_MODULE@$PKG_CONFIG_VERSION" \
        || die "go install $PKG_CONFIG_MODULE@$PKG_CONFIG_VERSION failed"
fi

log "building influxd v$INFLUXDB_VERSION in $build_dir (cold: several minutes, libflux via cargo)"
start=$SECONDS
: >"$PKG_CONFIG_LOG"
tmp_bin=$build_dir/influxd.new
rm -f "$tmp_bin"
ldflags="-s -w -X main.version=v$INFLUXDB_VERSION -X main.commit=none -X main.date=$INFLUXDB_DATE"
if ! (cd "$build_dir/src" && go build -ldflags "$ldflags" -o "$tmp_bin" "$INFLUXDB_MODULE/cmd/influxd"); then
    if [[ -s $PKG_CONFIG_LOG ]]; then
        log "last lines of $PKG_CONFIG_LOG (libflux/cargo build):"
        tail -n 40 "$PKG_CONFIG_LOG" >&2 || true
    fi
    die "go build of $INFLUXDB_MODULE/cmd/influxd failed (see output above; libflux sources/target are under \$(go env GOCACHE)/pkgconfig)"
fi
log "built in $((SECONDS - start)) s"

is_wanted_version "$tmp_bin" \
    || die "built binary does not report version $INFLUXDB_VERSION: $("$tmp_bin" version 2>&1 | head -n 1)"

mv -f "$tmp_bin" "$bin"
log "installed $bin ($("$bin" version 2>/dev/null | head -n 1))"
