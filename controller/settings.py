"""Where ctl keeps its state, and the one resolution order for settings.

Every setting resolves as: command-line flag > environment variable > config file > default,
and `resolve_all()` says which of them gave each value (`ctl config show`).

Defaults follow where ctl runs:
- from a checkout (this package sits next to the repository's `pyproject.toml`): the
  checkout's `.state/`, `runs/` and `inventory/virtual.yaml`, as always;
- installed for a user: XDG, `$XDG_STATE_HOME/ctl` (~/.local/state/ctl) for state and
  `$XDG_DATA_HOME/ctl/runs` (~/.local/share/ctl/runs) for run records;
- as the campaign service (systemd sets STATE_DIRECTORY / CONFIGURATION_DIRECTORY):
  /var/lib/ctl and /etc/ctl.
The config file is $CTL_CONFIG, else the first of `$XDG_CONFIG_HOME/ctl/config.yaml`
(~/.config/ctl/config.yaml) and `/etc/ctl/config.yaml` that exists: a YAML mapping with any of
`state_dir`, `runs_dir`, `inventory`, `database_url` (never secrets: those stay references).
A flag is registered once by the command line (`set_flag`, `ctl -i FILE ...`), so every module
that resolves a setting sees it, whichever command runs.

Shipped files (the inventories and campaign files ctl comes with) live in the checkout's
`inventory/` and `campaigns/`, or in the installed package's `controller/shipped/`; a name that
is not a path that exists (`-i lab-rack.example.yaml`, `ctl campaign plan rtt-loss-sweep.yaml`)
is looked up there (`find_shipped`).
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from controller.errors import UsageError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ("state_dir", "runs_dir", "inventory", "database_url")
ENV = {"state_dir": "CTL_STATE_DIR", "runs_dir": "CTL_RUNS_DIR", "inventory": "CTL_INVENTORY",
       "database_url": "CTL_DATABASE_URL"}


def in_checkout() -> bool:
    """ctl runs from its repository (not from an installed package)."""
    return (PROJECT_ROOT / "pyproject.toml").exists() and (PROJECT_ROOT / "controller").is_dir() \
        and (PROJECT_ROOT / "inventory").is_dir()


def config_path() -> Path | None:
    if os.environ.get("CTL_CONFIG"):
        return Path(os.environ["CTL_CONFIG"])
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "ctl" / "config.yaml"
    service = Path(os.environ["CONFIGURATION_DIRECTORY"].split(":")[0]) / "config.yaml" \
        if os.environ.get("CONFIGURATION_DIRECTORY") else None
    for p in (service, xdg, Path("/etc/ctl/config.yaml")):
        if p is not None and p.is_file():
            return p
    return None


def _config() -> tuple[dict, Path | None]:
    path = config_path()
    if path is None:
        return {}, None
    from controller.yamlload import load_yaml_with_lines
    data, _lines = load_yaml_with_lines(path)
    if data is None:
        return {}, path
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the config file must be a mapping of {', '.join(SETTINGS)}")
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise UsageError(f"{path}: unknown setting {unknown[0]!r} (known: {', '.join(SETTINGS)})")
    if data.get("database_url"):
        from controller.labdb import check_url   # no secret in it, a URL libpq reads as meant
        check_url(str(data["database_url"]), f"{path}: database_url")
    return {k: str(v) for k, v in data.items() if v is not None}, path


def _defaults() -> dict[str, tuple[str, str]]:
    """setting -> (value, where the default comes from)."""
    if in_checkout():
        return {"state_dir": (str(PROJECT_ROOT / ".state"), "default: the checkout's .state"),
                "runs_dir": (str(PROJECT_ROOT / "runs"), "default: the checkout's runs/"),
                "inventory": (str(PROJECT_ROOT / "inventory" / "virtual.yaml"), "default: the virtual rack"),
                "database_url": ("", "default: none (SQLite in the state dir)")}
    if os.environ.get("STATE_DIRECTORY"):     # systemd's StateDirectory= (the campaign service)
        state = Path(os.environ["STATE_DIRECTORY"].split(":")[0])
        return {"state_dir": (str(state), "default: systemd StateDirectory"),
                "runs_dir": (str(state / "runs"), "default: systemd StateDirectory/runs"),
                "inventory": (str(packaged_inventory()), "default: the virtual rack"),
                "database_url": ("", "default: none (SQLite in the state dir)")}
    home = Path.home()
    state = Path(os.environ.get("XDG_STATE_HOME") or home / ".local" / "state") / "ctl"
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share") / "ctl"
    return {"state_dir": (str(state), "default: XDG_STATE_HOME/ctl"),
            "runs_dir": (str(data / "runs"), "default: XDG_DATA_HOME/ctl/runs"),
            "inventory": (str(packaged_inventory()), "default: the virtual rack"),
            "database_url": ("", "default: none (SQLite in the state dir)")}


def packaged_inventory() -> Path:
    """The shipped virtual rack's inventory: the checkout's, else the installed package data."""
    return shipped_dir("inventory") / "virtual.yaml"


# kind -> the folder of the checkout; an installed package carries it as controller/shipped/<kind>
# (setup.py copies it there).
SHIPPED_KINDS = {"inventory": "inventory", "campaigns": "campaigns"}
SHIPPED_WHAT = {"inventory": "inventory", "campaigns": "campaign file"}


def shipped_dir(kind: str) -> Path:
    """Where the shipped files of `kind` ("inventory", "campaigns") are: the checkout's folder,
    else the installed package's."""
    if in_checkout():
        return PROJECT_ROOT / SHIPPED_KINDS[kind]
    return Path(__file__).resolve().parent / "shipped" / SHIPPED_KINDS[kind]


def shipped_files(kind: str) -> list[str]:
    """The names of the shipped YAML files of `kind`, relative to its folder, sorted."""
    base = shipped_dir(kind)
    if not base.is_dir():
        return []
    return sorted(str(p.relative_to(base)) for p in base.rglob("*.yaml") if p.is_file())


def find_shipped(kind: str, name: str) -> Path | None:
    """A shipped file of `kind` by its name (`rtt-loss-sweep.yaml`, `rtt-loss-sweep`,
    `deviations/NAME.yaml`), or None: a name with `..`, an absolute path or a name that is not
    a shipped file finds nothing."""
    if not name or os.path.isabs(name) or ".." in Path(name).parts or "\\" in name:
        return None
    for candidate in (name, name + ".yaml"):
        if candidate in shipped_files(kind):
            return shipped_dir(kind) / candidate
    return None


def _stem(name: str) -> str:
    return name.removesuffix(".yaml").removesuffix(".yml")


def close_shipped(kind: str, name: str) -> list[str]:
    """The shipped files of `kind` whose name is close to `name` (a misspelling: difflib), at most
    three, best first; names are compared without `.yaml`, with and without their folder
    (`dev-balia-flor` finds `deviations/dev-balia-floor.yaml`). Nothing for an absolute path."""
    if not name or os.path.isabs(name):
        return []
    spellings: dict[str, str] = {}
    for n in shipped_files(kind):
        for s in (_stem(n), _stem(n.rsplit("/", 1)[-1])):
            spellings.setdefault(s, n)
    out: list[str] = []
    for word in dict.fromkeys((_stem(name), _stem(name.rsplit("/", 1)[-1]))):
        for s in difflib.get_close_matches(word, list(spellings), n=6, cutoff=0.7):
            if spellings[s] not in out:
                out.append(spellings[s])
    return out[:3]


def existing_or_shipped(kind: str, value: str) -> Path:
    """`value` as a path when it names a file that exists, else the shipped file of that name,
    else `value` itself (whose reader then says it cannot read it) -- unless shipped files have a
    name close to it: then a UsageError saying which (`ctl campaign plan rtt-loss-sweap.yaml`:
    did you mean 'rtt-loss-sweep.yaml'?)."""
    path = Path(os.path.expanduser(value))
    if path.exists():
        return path
    found = find_shipped(kind, value)
    if found is not None:
        return found
    close = close_shipped(kind, value)
    if close:
        raise UsageError(f"{value}: no such file, nor a shipped {SHIPPED_WHAT[kind]} of that name (did you mean "
                         + " or ".join(repr(c) for c in close) + "? `ctl config show` lists the shipped ones)")
    return path


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    source: str          # "flag", "environment (CTL_...)", "config file (PATH)" or "default: ..."


# What export_state_dir() put into the environment itself, with where it really came from.
_EXPORTED: dict[str, Setting] = {}
# Flags the command line gave for the whole command (`ctl -i FILE ...`: set_flag).
_FLAGS: dict[str, str] = {}


def set_flag(name: str, value: str | None) -> None:
    """The command line's flag for setting `name` (None: none given), seen by every later
    `resolve(name)` of this process: `ctl -i FILE config show` says "command-line flag"."""
    if value is None:
        _FLAGS.pop(name, None)
    else:
        _FLAGS[name] = str(value)


def resolve(name: str, flag: str | None = None) -> Setting:
    s = _resolve(name, flag if flag else _FLAGS.get(name))
    if name == "inventory" and s.value and not Path(os.path.expanduser(s.value)).exists():
        found = find_shipped("inventory", s.value)      # `-i lab-rack.example.yaml`
        if found is not None:
            return Setting(name, str(found), f"{s.source}: {s.value} shipped with ctl")
    return s


def _resolve(name: str, flag: str | None) -> Setting:
    if flag:
        return Setting(name, str(flag), "command-line flag")
    env = os.environ.get(ENV[name])
    if env:
        mine = _EXPORTED.get(name)
        if mine is not None and mine.value == env:
            return mine
        return Setting(name, env, f"environment ({ENV[name]})")
    cfg, path = _config()
    if cfg.get(name):
        v = os.path.expanduser(cfg[name]) if name != "database_url" else cfg[name]
        return Setting(name, v, f"config file ({path})")
    value, where = _defaults()[name]
    return Setting(name, value, where)


def resolve_all() -> list[Setting]:
    return [resolve(n) for n in SETTINGS]


def state_dir() -> Path:
    """$CTL_STATE_DIR > config file > default (the checkout's `.state/`, XDG or systemd's)."""
    return Path(resolve("state_dir").value)


def export_state_dir() -> Path:
    """Make `${CTL_STATE_DIR}` usable in inventory paths (and in child processes); the other
    settings a config file gives are exported the same way, so every module and child sees one
    resolution."""
    for name in SETTINGS:
        s = resolve(name)
        if name == "state_dir" or (s.value and s.source.startswith("config file")):
            if not s.source.startswith("environment"):
                _EXPORTED[name] = s
            os.environ[ENV[name]] = s.value
    return Path(os.environ["CTL_STATE_DIR"])


def runs_dir(flag: str | None = None) -> Path:
    """--runs-dir > $CTL_RUNS_DIR > config file > default (the checkout's runs/ or XDG data)."""
    return Path(resolve("runs_dir", flag).value)
