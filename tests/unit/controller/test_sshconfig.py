"""ctl's reader of the OpenSSH client config (controller.openssh_config, used by controller.sshconfig).

Issue 23: the config a user names must never make ctl execute anything (`Match exec`,
ProxyCommand, LocalCommand, KnownHostsCommand, PermitLocalCommand -- wherever they appear, also in
blocks that do not match and in included files), must never carry a secret into an error, a
record or a DNS query (`${VAR}` expansion), and a file that includes itself is a one-line error.
The directives ctl honours resolve as OpenSSH resolves them: checked here against `ssh -G`, the
real OpenSSH client, on the same files.
"""
from __future__ import annotations

import asyncio
import os
import pwd
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from controller.errors import CtlError, ParameterError, SSHError
from controller.inventory import SSH
from controller.openssh_config import MAX_FILE_BYTES, Local, OpenSSHConfig, load, match_pattern, parse_text
from controller.ssh import CommandLog, HostTarget, SSHSession
from controller.sshconfig import connection_plan, load_openssh_config
from tests.support.shipped import LAB, ROOT

pytestmark = pytest.mark.usefixtures("tmp_state_dir")

SECRET = "ctl-test-secret-9f3a7c"


def settings(cfg: Path, **kw) -> SSH:
    return SSH(known_hosts=Path("/k/kh"), config_file=cfg, explicit=frozenset({"config_file", *kw}), **kw)


def plan(cfg: Path, host: str = "dn1", **kw):
    return connection_plan(settings(cfg, **kw), host, load_openssh_config(cfg))


def refusal(cfg: Path, host: str = "dn1") -> str:
    """The one-line error ctl gives for `cfg` (asked for `host`)."""
    with pytest.raises(ParameterError) as err:
        plan(cfg, host)
    msg = str(err.value)
    assert "\n" not in msg and len(msg) < 1000, msg
    return msg


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ---- nothing in the file is ever executed --------------------------------------------------

EXEC_LAYOUTS = {
    # name: (main file, included file or None, which file and line the refusal names)
    "at the top": ('Host dn1\n    User ops\nMatch exec "touch {pwned}"\n    User x\n', None, "main", 3),
    "after a criterion that fails": ('Match host elsewhere exec "touch {pwned}"\n    User x\n', None, "main", 1),
    "negated": ('Match !exec "touch {pwned}"\n    User x\n', None, "main", 1),
    "as exec=": ('Match exec="touch {pwned}"\n    User x\n', None, "main", 1),
    "in an included file": ("Host *\n    User ops\nInclude {inc}\n", 'Match exec "touch {pwned}"\n', "inc", 1),
    "in a file included from a block that does not match":
        ("Host elsewhere\n    Include {inc}\nHost *\n    User ops\n",
         '# two lines first\n\nMatch exec "touch {pwned}"\n    User x\n', "inc", 3),
}


@pytest.mark.parametrize("layout", sorted(EXEC_LAYOUTS))
def test_match_exec_is_never_run_and_is_refused_with_one_line(tmp_path, layout):
    main, inc, where, line = EXEC_LAYOUTS[layout]
    pwned = tmp_path / "pwned"
    files = {"main": tmp_path / "config", "inc": tmp_path / "inc.conf"}
    if inc is not None:
        write(files["inc"], inc.format(pwned=pwned))
    write(files["main"], main.format(pwned=pwned, inc=files["inc"]))
    msg = refusal(files["main"])
    assert not pwned.exists(), "a Match exec command ran"
    assert f"{files[where]}, line {line}" in msg and "Match exec" in msg, msg
    assert str(pwned) not in msg           # the command itself is not repeated


@pytest.mark.parametrize("directive", ["ProxyCommand sh -c 'touch {pwned}'", "LocalCommand touch {pwned}",
                                       "KnownHostsCommand /usr/bin/touch {pwned}", "PermitLocalCommand yes"])
@pytest.mark.parametrize("where", ["in the host's block", "in a block that does not match", "in an included file"])
def test_directives_that_run_commands_are_refused_wherever_they_are(tmp_path, directive, where):
    pwned = tmp_path / "pwned"
    line = directive.format(pwned=pwned)
    inc = write(tmp_path / "inc.conf", f"Host *\n    {line}\n")
    text = {"in the host's block": f"Host dn1\n    HostName 10.0.0.5\n    {line}\n",
            "in a block that does not match": f"Host dn1\n    HostName 10.0.0.5\nHost elsewhere\n    {line}\n",
            "in an included file": f"Host dn1\n    HostName 10.0.0.5\nInclude {inc}\n"}[where]
    cfg = write(tmp_path / "config", text)
    msg = refusal(cfg)
    keyword = directive.split()[0]
    lines = {"in the host's block": f"{cfg}, line 3", "in a block that does not match": f"{cfg}, line 4",
             "in an included file": f"{inc}, line 2"}
    named = lines[where]
    assert named in msg and keyword in msg, msg
    assert str(pwned) not in msg
    assert not pwned.exists()


def test_asyncssh_never_reads_the_users_own_config(tmp_path, monkeypatch):
    """ctl hands asyncssh the values it resolved (config=[]): asyncssh's parser never runs, so not
    even ~/.ssh/config of the account running ctl can execute anything. A real connection attempt
    (to a closed local port) with HOME pointing at a config whose `Match exec` would leave a file."""
    pwned = tmp_path / "pwned"
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    write(home / ".ssh" / "config", f'Match exec "touch {pwned}"\n    User x\n')
    monkeypatch.setenv("HOME", str(home))
    kh = write(tmp_path / "known_hosts", "")
    key = tmp_path / "id"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    with socket.socket() as s:                      # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ssh = SSH(known_hosts=kh, key_file=key, port=port, connect_timeout=3,
              explicit=frozenset({"key_file", "port", "known_hosts"}))
    session = SSHSession(HostTarget("a1", "127.0.0.1", ssh), CommandLog(None))
    with pytest.raises(SSHError, match="cannot connect"):
        asyncio.run(session.connect())
    assert not pwned.exists()


def test_a_pool_works_out_every_route_before_it_connects(tmp_path, monkeypatch):
    """SSHPool.connect_all: the host whose config is refused has that error as its outcome and is
    never connected; the others are still each tried (their own outcome: here no known_hosts)."""
    from controller.inventory import load_inventory
    from controller.ssh import SSHPool
    monkeypatch.setenv("HOME", str(tmp_path))
    pwned = tmp_path / "pwned"
    cfg = write(tmp_path / "ssh_config", f'Match exec "touch {pwned}"\n')
    text = LAB.read_text().replace("    mgmt: {address: 192.168.50.31}\n",
                                   f"    mgmt: {{address: 127.0.50.31}}\n    ssh: {{config_file: {cfg}}}\n", 1)
    inv = load_inventory(write(tmp_path / "lab.yaml", text.replace("192.168.50.", "127.0.50.")))

    async def go():
        async with SSHPool(inv, CommandLog(None), ["a1", "dn1"]) as pool:
            return await pool.connect_all()
    out = asyncio.run(go())
    assert isinstance(out["dn1"].exception, ParameterError) and "Match exec" in str(out["dn1"].exception)
    assert isinstance(out["a1"].exception, SSHError) and "known_hosts" in str(out["a1"].exception)
    assert list(out) == ["a1", "dn1"] and not pwned.exists()


# ---- secrets never leave through expansion -------------------------------------------------

@pytest.mark.parametrize("line, keyword", [
    ("IdentityFile ${CTL_TEST_SECRET}/id", "IdentityFile"),
    ("HostName ${CTL_TEST_SECRET}.invalid", "HostName"),
    ("User ${CTL_TEST_SECRET}", "User"),
    ("Include ${CTL_TEST_SECRET}/more.conf", "Include"),
    ("ProxyJump ${CTL_TEST_SECRET}.invalid", "ProxyJump"),
])
def test_an_environment_variable_is_named_never_its_value(tmp_path, monkeypatch, line, keyword):
    monkeypatch.setenv("CTL_TEST_SECRET", SECRET)
    cfg = write(tmp_path / "config", f"Host dn1\n    {line}\n    IdentityFile /k/id\n")
    msg = refusal(cfg)
    assert SECRET not in msg
    assert "CTL_TEST_SECRET" in msg and keyword in msg and f"{cfg}, line 2" in msg, msg


def test_a_secret_never_reaches_a_hop_or_a_connection_error(tmp_path, monkeypatch):
    """The whole way: the session's error (what the run record and stderr get) has no secret, and
    the route was refused before any name was looked up."""
    monkeypatch.setenv("CTL_TEST_SECRET", SECRET)
    kh = write(tmp_path / "known_hosts", "")
    for text in ("Host dn1\n    IdentityFile ${CTL_TEST_SECRET}/id\n",
                 "Host dn1\n    HostName ${CTL_TEST_SECRET}.invalid\n    IdentityFile /k/id\n"):
        cfg = write(tmp_path / "config", text)
        ssh = SSH(known_hosts=kh, config_file=cfg, connect_timeout=3, explicit=frozenset({"config_file"}))
        session = SSHSession(HostTarget("dn1", "dn1", ssh), CommandLog(None))
        with pytest.raises(CtlError) as err:
            asyncio.run(session.connect())
        assert SECRET not in str(err.value) and "CTL_TEST_SECRET" in str(err.value), err.value
        assert err.value.exit_code == 2 and session.route == []


# ---- includes ----------------------------------------------------------------------------

def test_a_config_that_includes_itself_is_a_one_line_error(tmp_path):
    cfg = tmp_path / "config"
    write(cfg, f"Host dn1\n    User ops\nInclude {cfg}\n")
    msg = refusal(cfg)
    assert str(cfg) in msg and "includes itself" in msg, msg


def test_a_loop_through_another_file_names_the_chain(tmp_path):
    a, b = tmp_path / "a.conf", tmp_path / "b.conf"
    write(a, f"Include {b}\n")
    write(b, f"Host *\n    User ops\nInclude {a}\n")
    msg = refusal(a)
    assert f"{b}, line 3" in msg and str(a) in msg and "includes itself" in msg, msg


def test_the_cli_refuses_before_connecting_with_exit_2_and_one_line(tmp_path):
    """`ctl link show` on the lab inventory with a config whose Match exec would leave a file."""
    pwned = tmp_path / "pwned"
    cfg = write(tmp_path / "ssh_config", f'Host *\n    User ctl\nMatch exec "touch {pwned}"\n')
    text = LAB.read_text()
    assert "  connect_timeout: 10\n" in text
    inv = write(tmp_path / "lab.yaml", text.replace("  connect_timeout: 10\n",
                                                     f"  connect_timeout: 2\n  config_file: {cfg}\n", 1))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CTL_STATE_DIR": str(tmp_path / "state"),
           "CTL_LOCK_DIR": os.environ.get("CTL_LOCK_DIR", str(tmp_path / "locks"))}
    p = subprocess.run([sys.executable, "-m", "controller", "link", "show", "path1", "--inventory", str(inv)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stdout + p.stderr
    assert f"{cfg}, line 3" in lines[0] and "Match exec" in lines[0], lines
    assert not pwned.exists()


def test_include_depth_is_bounded_as_in_openssh(tmp_path):
    """16 nested Includes are read (OpenSSH's READCONF_MAX_DEPTH); the 17th is an error."""
    files = [tmp_path / f"c{i:02}.conf" for i in range(18)]
    for i, f in enumerate(files):
        write(f, f"Include {files[i + 1]}\n" if i + 1 < len(files) else "Host *\n    User deep\n    IdentityFile /k/id\n")
    assert str(plan(files[1])[0]).startswith("deep@")          # 16 Includes below c01: read
    msg = refusal(files[0])
    assert "more than 16 deep" in msg and f"{files[16]}, line 1" in msg, msg


def test_the_same_file_twice_side_by_side_is_no_loop(tmp_path):
    inc = write(tmp_path / "inc.conf", "Host *\n    IdentityFile /k/shared\n")
    cfg = write(tmp_path / "config", f"Include {inc}\nHost dn1\n    User ops\nInclude {inc} {inc}\n")
    [hop] = plan(cfg)
    assert str(hop) == "ops@dn1:22" and hop.key_files == (Path("/k/shared"),)


# ---- what is honoured, exactly as OpenSSH reads it --------------------------------------------

def resolve(text: str, tmp_path: Path, host: str = "dn1", **kw):
    cfg = write(tmp_path / "config", text)
    return load(cfg).resolve(host, **{"default_user": "root", "default_port": 22, **kw})


@pytest.mark.parametrize("text, host, user, port", [
    # first obtained value wins; keywords in any case; `=` with or without blanks
    ("HOST dn1\n  hostname=10.0.0.5\n  User ops\nHost *\n  HostName 10.9.9.9\n  user = other\n  PORT  2200\n",
     "10.0.0.5", "ops", 2200),
    # quotes and escapes; a `#` starting an argument ends the line
    ("Host \"d\"n1 # comment\n  User \"o\"p's' # the account\n  Port \"22\"01\n", "dn1", "ops", 2201),
    # a negated pattern excludes the host whatever else matches; `Host a,b` is one pattern, as in OpenSSH
    ("Host * !dn1\n  User no\nHost dn1,gate\n  User no2\nHost d?1\n  User yes\n", "dn1", "yes", 22),
    # Match host sees the host after HostName; originalhost the host as given
    ("Host dn1\n  HostName 10.0.0.5\nMatch host 10.0.0.*\n  User byname\n", "10.0.0.5", "byname", 22),
    ("Host dn1\n  HostName 10.0.0.5\nMatch originalhost DN1\n  Port 2222\n", "10.0.0.5", "root", 2222),
    # Match user: the remote user so far; localuser: the account running ctl; all
    ("Host dn1\n  User ops\nMatch user ops,!root\n  Port 2201\nMatch localuser nobody\n  Port 9\n"
     "Match all\n  HostName %h.lab\n", "dn1.lab", "ops", 2201),
    # Match final: a second pass after HostName; Host then matches the new name
    ("Host dn1\n  HostName Gate.Lab\nHost gate.lab\n  User second\nMatch final host gate.lab\n  Port 2202\n",
     "Gate.Lab", "second", 2202),
    # without Match final there is no second pass, and `canonical` never holds
    ("Host dn1\n  HostName gate.lab\nHost gate.lab\n  User second\nMatch canonical\n  Port 2202\n",
     "gate.lab", "root", 22),
    # Tag and Match tagged
    ("Host dn1\n  Tag lab\nMatch tagged lab\n  User tagged\n", "dn1", "tagged", 22),
])
def test_honoured_directives_resolve_as_in_openssh(tmp_path, text, host, user, port):
    r = resolve(text, tmp_path)
    assert (r.host, r.user, r.port) == (host, user, port)


def test_a_user_with_a_blank_is_refused_as_a_login_name(tmp_path):
    with pytest.raises(ParameterError, match="not a valid login name"):
        resolve('Host "dn1"\n  User "op s"x\n', tmp_path)


def test_identity_files_accumulate_with_tokens_and_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    r = resolve("Host dn1\n  HostName 10.0.0.5\n  User ops\n  IdentityFile ~/.ssh/id_%h_%r_%p\n"
                "  IdentityFile ${HOME}/k/%n-%u%%\n  IdentityFile none\nHost *\n  IdentityFile ~/.ssh/id_%h_%r_%p\n"
                "  IdentityFile %d/last\n", tmp_path, port=2201)
    me = pwd.getpwuid(os.getuid()).pw_name
    assert r.identity_files == (tmp_path / ".ssh/id_10.0.0.5_ops_2201", tmp_path / f"k/dn1-{me}%",
                                tmp_path / "last")
    assert set(r.supplied) == {"HostName", "User", "IdentityFile"}


@pytest.mark.parametrize("line, said", [
    ("HostName %r.lab", "%r is not a token it takes"),
    ("IdentityFile /k/%Z", "%Z is not a token"),
    ("Include %h.conf", "%h is not a token"),           # an Include is read before any host is known
    ("User %r", "%r is not a token"),
    ("Port 99999", "not a port number"),
    ("Port 22 23", "more than one argument"),
    ("ProxyJump ssh://gate", "is not [user@]host[:port]"),
    ("Match localnetwork 10.0.0.0/8", "Match localnetwork is not supported"),
    ("Match host", "Match host needs an argument"),
    ("Match all host dn1", "'all' must stand alone"),
    ('Host "dn1', "a quote is not closed"),
    ("HostName dn1;rm", "is not a host name or address"),
    ("CanonicalizeHostname maybe", "is not yes, no or always"),
])
def test_what_ctl_cannot_read_is_a_one_line_error(tmp_path, line, said):
    cfg = write(tmp_path / "config", f"Host elsewhere\n    {line}\n")
    msg = refusal(cfg)
    assert f"{cfg}, line 2" in msg and said in msg, msg


def test_canonicalization_in_force_is_refused_and_elsewhere_ignored(tmp_path):
    assert resolve("Host other\n  CanonicalizeHostname yes\n", tmp_path).host == "dn1"
    with pytest.raises(ParameterError, match=r"config, line 2: CanonicalizeHostname yes is not supported"):
        resolve("Host dn1\n  CanonicalizeHostname yes\n  CanonicalDomains lab\n", tmp_path)


def test_harmless_values_of_refused_directives_are_read(tmp_path):
    """`ProxyCommand none` runs nothing -- and, as in OpenSSH, a ProxyJump after it is not taken."""
    r = resolve("Host dn1\n  ProxyCommand none\n  PermitLocalCommand no\n  KnownHostsCommand none\n"
                "  ProxyJump gate\n", tmp_path)
    assert r.jump is None
    assert resolve("Host dn1\n  ProxyJump gate\n  ProxyCommand none\n", tmp_path).jump == "gate"


def test_ignored_directives_and_unknown_keywords_change_nothing(tmp_path):
    r = resolve("Host dn1\n  ForwardAgent yes\n  RemoteCommand rm -rf /\n  LocalForward 1 x:2\n  ProxyUseFdpass yes\n"
                "  PKCS11Provider /x.so\n  NoSuchOption 1\n  User ops\n", tmp_path)
    assert (r.user, r.supplied) == ("ops", ("User",))


def test_include_globs_are_relative_to_dot_ssh_in_lexical_order(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    d = tmp_path / ".ssh" / "conf.d"
    d.mkdir(parents=True)
    write(d / "20-b.conf", "Host dn1\n  User second\n  IdentityFile /k/b\n")
    write(d / "10-a.conf", "Host dn1\n  User first\n  IdentityFile /k/a\n")
    (d / "30-dir.conf").mkdir()                          # a directory matched by the glob is skipped
    r = resolve("Include conf.d/*.conf\n", tmp_path)
    assert r.user == "first" and r.identity_files == (Path("/k/a"), Path("/k/b"))


def test_an_include_in_a_block_that_does_not_apply_applies_nothing(tmp_path):
    inc = write(tmp_path / "inc.conf", "User fromincluded\nHost *\n  Port 2222\n")
    r = resolve(f"Host elsewhere\n  Include {inc}\nHost dn1\n  Include {inc}\n  HostName 10.0.0.5\n", tmp_path)
    # the second Include applies; the included file's `Host *` ends with it: HostName still applies
    assert (r.user, r.port, r.host) == ("fromincluded", 2222, "10.0.0.5")
    r = resolve(f"Host elsewhere\n  Include {inc}\n", tmp_path)
    assert (r.user, r.port) == ("root", 22)


@pytest.mark.parametrize("make", ["fifo", "group-writable", "large", "directory"])
def test_a_file_ctl_should_not_read_is_refused_without_blocking(tmp_path, make):
    cfg = tmp_path / "config"
    if make == "fifo":
        os.mkfifo(cfg)
    elif make == "directory":
        cfg.mkdir()
    else:
        write(cfg, "# x\n" * (MAX_FILE_BYTES // 4 + 1) if make == "large" else "Host *\n  User ops\n")
        if make == "group-writable":
            cfg.chmod(0o664)
    with pytest.raises(ParameterError, match={"fifo": "not a regular file", "directory": "not a regular file",
                                              "group-writable": "another account could change it",
                                              "large": "larger than 256 KiB"}[make]):
        load_openssh_config(cfg)


def test_a_variable_named_as_a_secret_is_never_expanded(tmp_path):
    cfg = write(tmp_path / "config", "Host dn1\n  IdentityFile ${HOME}/id\n")
    assert plan(cfg)[0].key_files == (Path(os.path.expanduser("~")) / "id",)
    with pytest.raises(ParameterError, match=r"\$\{HOME\} is refused") as err:
        connection_plan(settings(cfg), "dn1", load_openssh_config(cfg, secret_env={"HOME"}))
    assert os.path.expanduser("~") not in str(err.value)


# ---- against the real OpenSSH client ------------------------------------------------------------

HOSTS = ("dn1", "dn2", "gate", "a1.lab", "10.0.0.5", "DN1")
_PATTERNS = ("dn1", "dn*", "d?1", "*", "gate", "*.lab", "10.0.0.?", "a1.lab", "DN1", "dn1,gate", "*n*", "")
_neg = st.booleans()
_host_line = st.lists(st.tuples(_neg, st.sampled_from([p for p in _PATTERNS if p])), min_size=1, max_size=3).map(
    lambda ps: "Host " + " ".join(("!" if n else "") + p for n, p in ps))
_plist = st.lists(st.tuples(_neg, st.sampled_from(_PATTERNS)), min_size=1, max_size=3).map(
    lambda ps: ",".join(("!" if n else "") + p for n, p in ps))
_ulist = st.lists(st.tuples(_neg, st.sampled_from(("ops", "root", "r*", "ctl", "*"))), min_size=1, max_size=2).map(
    lambda ps: ",".join(("!" if n else "") + p for n, p in ps))
_criterion = st.one_of(
    st.tuples(_neg, st.sampled_from(("host", "originalhost")), _plist),
    st.tuples(_neg, st.just("user"), _ulist),
    st.tuples(_neg, st.just("localuser"), st.sampled_from(("root", "nobody", "r*"))),
    st.tuples(st.just(False), st.sampled_from(("final", "canonical")), st.just(None)))   # `!final`: see below
_match_line = st.one_of(
    st.sampled_from(("Match all", "Match final all", "Match canonical all")),
    st.lists(_criterion, min_size=1, max_size=3).map(lambda cs: "Match " + " ".join(
        ("!" if n else "") + c + (f' "{a}"' if a is not None else "") for n, c, a in cs)))
_option = st.sampled_from((
    "HostName 192.168.50.31", "HostName %h.lab", "HostName gate", "HostName dn2", "HostName Gate.LAB",
    "User ops", "User root", "User ctl", "Port 2201", "Port 22", "Port 2222",
    "IdentityFile /k/a", "IdentityFile /k/b", "IdentityFile /k/c", "IdentityFile none",
    "ProxyJump jump@gate.lab", "ProxyJump none", "ProxyJump b1,ops@b2:2222", "ProxyCommand none",
    "ForwardAgent yes", "StrictHostKeyChecking no", "ServerAliveInterval 5"))


@st.composite
def _directive(draw) -> str:
    key, _, value = draw(_option).partition(" ")
    key = draw(st.sampled_from((key, key.lower(), key.upper())))
    return key + draw(st.sampled_from((" ", "=", " = ", "\t", "  "))) + value


_block = st.tuples(st.one_of(st.none(), _host_line, _match_line), st.lists(_directive(), max_size=4))


def _text(blocks) -> str:
    return "".join((f"{h}\n" if h else "") + "".join(f"    {d}\n" for d in ds) for h, ds in blocks)


def _ssh_G(cfg: Path, host: str) -> dict[str, list[str]] | None:
    """What `ssh -G` resolves (None: it refused the file)."""
    p = subprocess.run(["ssh", "-G", "-F", str(cfg), host], capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        return None
    out: dict[str, list[str]] = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        out.setdefault(k, []).append(v)
    return out


_DEFAULT_IDS = ["~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ecdsa_sk", "~/.ssh/id_ed25519", "~/.ssh/id_ed25519_sk",
                "~/.ssh/id_xmss", "~/.ssh/id_dsa"]


@hsettings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(main=st.lists(_block, min_size=1, max_size=5), included=st.lists(_block, max_size=3),
       at=st.integers(0, 5))
def test_ctl_resolves_what_openssh_resolves(tmp_path, main, included, at):
    """Random configs of what ctl honours (Host and Match blocks, negations, wildcards, Match final,
    an Include in some block) resolved by ctl and by `ssh -G` (OpenSSH's own resolution, which
    connects to nothing): HostName, User, Port, IdentityFile and ProxyJump agree for every host.
    Left out: `Match !final` (OpenSSH before 9.8 asks for a final pass even when it is negated,
    ssh_config(5) of today does not), `tagged` and tokens in User (newer than this machine's ssh)."""
    inc = write(tmp_path / "inc.conf", _text(included))
    blocks = list(main)
    if included:
        h, ds = blocks[min(at, len(blocks) - 1)]
        blocks[min(at, len(blocks) - 1)] = (h, [*ds, f"Include {inc}"])
    cfg = write(tmp_path / "config", _text(blocks))
    try:
        config = load(cfg)
    except ParameterError as exc:              # then OpenSSH refuses the file too
        assert _ssh_G(cfg, "dn1") is None, (str(exc), cfg.read_text())
        return
    local_user = config.local.user
    for host in HOSTS:
        want = _ssh_G(cfg, host)
        assert want is not None, (host, cfg.read_text())
        got = config.resolve(host, default_user=local_user, default_port=22)
        assert got.host.lower() == want["hostname"][0], (host, cfg.read_text())
        assert [got.user, str(got.port)] == [want["user"][0], want["port"][0]], (host, cfg.read_text())
        ids = [i for i in want.get("identityfile", []) if i.lower() != "none"]
        assert [str(p) for p in got.identity_files] == ids or (not got.identity_files and ids == _DEFAULT_IDS), \
            (host, cfg.read_text())
        jump = None if got.jump is None or got.jump.lower() == "none" else got.jump
        assert jump == (want.get("proxyjump") or [None])[0], (host, cfg.read_text())


# ---- fuzzing: anything at all is read, or refused with ctl's own error ---------------------------

LOCAL = Local("root", 0, "/root", "ctl-host.lab", {"HOME": "/root", "USER": "root", "LOGNAME": "root"})
_PIECES = ("Host", "Match", "HostName", "User", "Port", "IdentityFile", "ProxyJump", "Include", "Tag", "ProxyCommand",
           "LocalCommand", "exec", "host", "user", "all", "final", "canonical", "tagged", "=", " ", "\t", "\n", '"',
           "'", "\\", "#", "!", ",", "*", "?", "%", "%h", "%%", "%r", "${", "}", "${HOME}", "dn1", "none", "22", "a@b:1",
           "\0", "\r", "\f", "\u202e", "é")


def _read_any(text: str) -> None:
    try:
        cfg = OpenSSHConfig(parse_text(text, "fuzz"), LOCAL)
        for host in ("dn1", "10.0.0.5"):
            cfg.resolve(host, default_user="root", default_port=22)
    except ParameterError as exc:
        assert "\n" not in str(exc) and str(exc)


@hsettings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_is_read_or_refused_with_one_line(text):
    _read_any(text)


@hsettings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80).map("".join))
def test_config_like_text_is_read_or_refused_with_one_line(text):
    _read_any(text)


def test_pathological_inputs_stay_linear():
    """What makes a backtracking matcher or a quadratic scanner crawl: each is a single pass here
    (no time is asserted; the suite's own timeout would catch a regression)."""
    host = "a" * 250
    assert not match_pattern(host, "*a" * 120 + "*b")
    assert match_pattern(host, "*" + "a*" * 120)
    r = OpenSSHConfig(parse_text("Host " + "*a" * 20000 + "*b\n  User x\nMatch host " + "*a*b," * 10000 + "\n"
                                 "  Port 2\n", "big"), LOCAL).resolve(host, default_user="root", default_port=22)
    assert (r.user, r.port) == ("root", 22)
    with pytest.raises(ParameterError, match="not a port number"):
        parse_text("Port " + "%" * 100000 + "\n")
    _read_any('IdentityFile "' + "\\\"" * 50000 + '"\n' + "HostName " + "%%" * 50000 + "\n")
