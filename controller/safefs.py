"""Files ctl creates in places other users may write to (/run/lock, /tmp, a shared state or
runtime dir), created so that a local user cannot redirect them.

The rules, for a directory ctl keeps files in: it is created with a fixed mode when missing;
when it exists it must be a real directory (not a symlink), owned by the user ctl runs as,
and not writable by group or others; anything else is refused with one line naming the
problem, before any file in it is opened. Files in it are opened with O_NOFOLLOW, and an
existing file must be a regular file owned by the same user with a single link, so a
truncate or a write can never reach another file through a symlink or a hard link.

Trees of files written for someone else to read (`ctl campaign export`, `ctl service
install`), where the names may come from outside (a row of the lab database), are written
relative to directory descriptors, openat-style: `open_dir` opens (or creates) a directory
with O_DIRECTORY|O_NOFOLLOW, `sub_dir` a single-component sub-directory of it the same way,
and `replace_file_at` writes a file as a new O_CREAT|O_EXCL|O_NOFOLLOW temporary in that
directory renamed over the name, refusing a name that is a symlink, a FIFO, a device or a
directory. A name is one path component (`component`): never `..`, never with a `/`.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterator

from controller.errors import UnsafePath


def _describe(st: os.stat_result) -> str:
    m = st.st_mode
    kind = ("symlink" if stat.S_ISLNK(m) else "directory" if stat.S_ISDIR(m) else "FIFO" if stat.S_ISFIFO(m)
            else "socket" if stat.S_ISSOCK(m) else "device" if stat.S_ISBLK(m) or stat.S_ISCHR(m) else "file")
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
    with one link. O_TRUNC is applied only after those checks. The open itself never blocks
    (O_NONBLOCK: a FIFO planted in the file's place is refused, not waited on); the descriptor
    is blocking again once it is known to be a regular file. Returns it (O_CLOEXEC)."""
    truncate = bool(flags & os.O_TRUNC)
    try:
        fd = os.open(path, (flags & ~os.O_TRUNC) | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last component is a symlink
            raise UnsafePath(f"refusing {what} {path}: it is a symlink") from None
        if exc.errno == errno.ENXIO:  # O_WRONLY|O_NONBLOCK on a FIFO nobody reads (or a device)
            raise UnsafePath(f"refusing {what} {path}: not a regular file (a FIFO or a device)") from None
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
    if not flags & os.O_NONBLOCK:
        os.set_blocking(fd, True)
    if truncate:
        os.ftruncate(fd, 0)
    return fd


def write_private(path: Path, text: str, what: str, mode: int = 0o600) -> None:
    """Replace the contents of a file in a private directory, without following links."""
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, what, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def create_private(path: Path, text: str, what: str, mode: int = 0o600) -> bool:
    """Create `path` holding `text` only if nothing is there: written to a fresh temporary
    file beside it, then hard-linked into place (link(2) never replaces and never follows a
    symlink at the target), so an existing file -- whoever made it, whatever its first line --
    is never opened for writing, truncated or replaced, and `path` appears whole or not at all.
    Returns False when something already exists at `path`."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise UnsafePath(f"cannot create {what} {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w") as f:
            os.fchmod(f.fileno(), mode)
            f.write(text)
        try:
            os.link(tmp, path, follow_symlinks=False)
        except FileExistsError:
            return False
        except OSError as exc:
            raise UnsafePath(f"cannot create {what} {path}: {exc.strerror or exc}") from None
        return True
    finally:
        os.unlink(tmp)


def read_private(path: Path, what: str, limit: int = 64 << 10) -> bytes:
    """At most `limit` bytes of a file of ours, opened as open_private opens (no symlink, a
    regular file of this user with one link), without blocking on a FIFO in its place."""
    fd = open_private(path, os.O_RDONLY | os.O_NONBLOCK, what)
    with os.fdopen(fd, "rb") as f:
        return f.read(limit)


# ---- openat-style writing (names relative to a directory descriptor) ----------------------------

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def component(name: str, what: str) -> str:
    """`name` if it is a single path component (not empty, `.`, `..`; no `/` or NUL)."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name:
        raise UnsafePath(f"refusing {what} {name!r}: not a single file name")
    return name


def _dir_problem(fd: int, owned: bool) -> str | None:
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode):
        return f"not a directory ({_describe(st)})"
    if owned and st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    return None


def open_dir(path: Path, what: str, *, create: bool = True, mode: int = 0o755, private: bool = False) -> int:
    """A descriptor of directory `path` (created with its parents when missing and `create`).
    Its last component must not be a symlink; with `private`, it must also pass
    `check_private_dir` (ours, not writable by group or others). Close it with os.close."""
    path = Path(path)
    if create and not os.path.lexists(path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, mode)
        except FileExistsError:
            pass
        except OSError as exc:
            raise UnsafePath(f"cannot create {what} {path}: {exc.strerror or exc}") from None
    if private:
        check_private_dir(path, what)
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            st = os.lstat(path)
            raise UnsafePath(f"refusing {what} {path}: not a real directory ({_describe(st)})") from None
        raise UnsafePath(f"cannot open {what} {path}: {exc.strerror or exc}") from None
    return fd


def sub_dir(parent_fd: int, name: str, what: str, shown: str, mode: int = 0o755) -> int:
    """A descriptor of the directory `name` in `parent_fd`, created when missing; an existing
    one must be a real directory (not a symlink) of ours. `shown` names it in messages."""
    component(name, what)
    try:
        os.mkdir(name, mode, dir_fd=parent_fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UnsafePath(f"cannot create {what} {shown}: {exc.strerror or exc}") from None
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            raise UnsafePath(f"refusing {what} {shown}: not a real directory ({_describe(st)})") from None
        raise UnsafePath(f"cannot open {what} {shown}: {exc.strerror or exc}") from None
    problem = _dir_problem(fd, owned=True)
    if problem:
        os.close(fd)
        raise UnsafePath(f"refusing {what} {shown}: {problem}")
    return fd


def replace_file_at(dir_fd: int, name: str, data: str | bytes, what: str, shown: str, mode: int = 0o644) -> None:
    """Write `name` in the directory `dir_fd`: an existing entry must be a regular file (a
    symlink, FIFO, device or directory is refused and left as it is); the content goes to a new
    temporary file (O_CREAT|O_EXCL|O_NOFOLLOW|O_NONBLOCK: never an existing file) renamed over
    the name, so a reader sees the old or the new file, and nothing outside the directory is
    written. `shown` names the file in messages."""
    component(name, what)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"refusing {what} {shown}: not a regular file ({_describe(st)}); left as it is")
    tmp = f".{name}.ctl-new"
    try:
        os.unlink(tmp, dir_fd=dir_fd)     # a leftover of a killed writer (unlink never follows a link)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise UnsafePath(f"refusing {what} {shown}: its temporary name {tmp} is a directory") from None
    except OSError as exc:
        raise UnsafePath(f"cannot write {what} {shown}: {exc.strerror or exc}") from None
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     mode, dir_fd=dir_fd)
    except OSError as exc:
        raise UnsafePath(f"cannot write {what} {shown}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, mode)               # whatever the umask
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


@contextlib.contextmanager
def new_file_at(dir_fd: int, name: str, what: str, shown: str, mode: int = 0o644) -> Iterator[BinaryIO]:
    """`replace_file_at` for content written piece by piece (a large export): yields the
    temporary file (opened the same way, O_CREAT|O_EXCL|O_NOFOLLOW), renamed over `name` when
    the block ends without an exception and removed when it raises; `name` must not be a
    symlink, FIFO, device or directory."""
    component(name, what)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"refusing {what} {shown}: not a regular file ({_describe(st)}); left as it is")
    tmp = f".{name}.ctl-new"
    try:
        os.unlink(tmp, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise UnsafePath(f"cannot write {what} {shown}: {exc.strerror or exc}") from None
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     mode, dir_fd=dir_fd)
    except OSError as exc:
        raise UnsafePath(f"cannot write {what} {shown}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
