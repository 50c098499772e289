"""Files ctl creates in places other users may write to (/run/lock, /tmp, a shared state or
runtime dir), created so that a local user cannot redirect them.

The rules, for a directory ctl keeps files in: it is created with a fixed mode when missing;
when it exists it must be a real directory (not a symlink), owned by the user ctl runs as,
and not writable by group or others; anything else is refused with one line naming the
problem, before any file in it is opened. Files in it are opened with O_NOFOLLOW, and an
existing file must be a regular file owned by the same user with a single link, so a
truncate or a write can never reach another file through a symlink or a hard link.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from controller.errors import UnsafePath


def _describe(st: os.stat_result) -> str:
    kind = "symlink" if stat.S_ISLNK(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode) else "file"
    return f"a {kind} owned by uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}"


def check_private_dir(path: Path, what: str) -> None:
    """Refuse `path` unless it is a real directory of ours that others cannot write to."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise UnsafePath(f"{what} {path} does not exist") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"refusing {what} {path}: not a real directory ({_describe(st)})")
    if st.st_uid != os.geteuid():
        raise UnsafePath(f"refusing {what} {path}: owned by uid {st.st_uid}, not by this user "
                         f"(uid {os.geteuid()}); remove it or point ctl elsewhere")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafePath(f"refusing {what} {path}: writable by group or others "
                         f"(mode {stat.S_IMODE(st.st_mode):04o}); `chmod go-w` it")


def private_dir(path: Path, what: str, mode: int = 0o755) -> Path:
    """`path`, created when missing (its parents as needed), then checked (see module doc)."""
    path = Path(path)
    if not os.path.lexists(path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, mode)
        except FileExistsError:
            pass            # created meanwhile: the check below decides
        except OSError as exc:
            raise UnsafePath(f"cannot create {what} {path}: {exc.strerror or exc}") from None
    check_private_dir(path, what)
    return path


def open_private(path: Path, flags: int, what: str, mode: int = 0o644) -> int:
    """os.open without following a symlink; an existing file must be a regular file of ours
    with one link. O_TRUNC is applied only after those checks. Returns the descriptor (O_CLOEXEC)."""
    truncate = bool(flags & os.O_TRUNC)
    try:
        fd = os.open(path, (flags & ~os.O_TRUNC) | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symlink
            raise UnsafePath(f"refusing {what} {path}: it is a symlink") from None
        raise UnsafePath(f"cannot open {what} {path}: {exc.strerror or exc}") from None
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = f"not a regular file ({_describe(st)})"
    elif st.st_uid != os.geteuid():
        problem = f"owned by uid {st.st_uid}, not by this user"
    elif st.st_nlink != 1:
        problem = f"it has {st.st_nlink} hard links"
    if problem:
        os.close(fd)
        raise UnsafePath(f"refusing {what} {path}: {problem}")
    if truncate:
        os.ftruncate(fd, 0)
    return fd


def write_private(path: Path, text: str, what: str, mode: int = 0o600) -> None:
    """Replace the contents of a file in a private directory, without following links."""
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, what, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
