"""One root error type with clear subclasses.

Every error ctl raises on purpose derives from CtlError; the CLI turns it into one line
on stderr and the subclass's exit code. Anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

from controller.textsafe import shown


class CtlError(Exception):
    """Root of every error ctl raises deliberately."""

    exit_code = 1

    def one_line(self) -> str:
        """The message on one line, every terminal control escaped (a value from a host, a
        file or the lab database inside a message can never move the user's cursor)."""
        text = shown(" ".join(str(self).split()))
        return text or type(self).__name__


class UsageError(CtlError):
    """Bad input from the command line: nothing has been touched yet."""

    exit_code = 2


class ParameterError(UsageError):
    """A parameter value is malformed or out of its allowed range."""


class InventoryError(UsageError):
    """The inventory file is invalid (with file, line and field in the message)."""


class ScenarioError(UsageError):
    """Unknown scenario or a scenario that cannot run on this inventory."""


class UnsupportedShaping(UsageError):
    """A shaper back-end was asked for something it cannot do (e.g. delay on tbf)."""


class UnsafePath(UsageError):
    """A file or directory ctl would create or write is not safe to use (a symlink, owned by
    another user, writable by others): refused before anything is written."""


class RackBusy(CtlError):
    """Another controller holds the rack lock."""

    exit_code = 3


class LabError(CtlError):
    """The virtual rack could not be built, checked or torn down."""


class SSHError(CtlError):
    """A host could not be reached or the SSH connection was lost."""

    def __init__(self, host: str, message: str):
        super().__init__(f"{host}: {message}")
        self.host = host


class CommandFailed(CtlError):
    """A remote command exited non-zero (or timed out) where success was required."""

    def __init__(self, host: str, argv: tuple[str, ...], exit_status: int | None, stderr: str):
        shown = " ".join(argv)
        if len(shown) > 200:
            shown = shown[:197] + "..."
        detail = " ".join(stderr.split())[:300]
        status = "timed out" if exit_status is None else f"exit {exit_status}"
        super().__init__(f"{host}: `{shown}` failed ({status}){': ' + detail if detail else ''}")
        self.host = host
        self.argv = argv
        self.exit_status = exit_status
        self.stderr = stderr


class VerifyError(CtlError):
    """State read back from a host differs from the state ctl applied."""

    def __init__(self, host: str, what: str, differences: list[str]):
        super().__init__(f"{host}: {what} not as planned: " + "; ".join(differences))
        self.host = host
        self.differences = differences


class RestoreFailed(CtlError):
    """A host could not be brought back to the state read before the run; every problem named."""

    def __init__(self, host: str, problems: list[str]):
        super().__init__("; ".join(problems))
        self.host = host
        self.problems = problems


class TrafficError(CtlError):
    """A traffic tool (iperf3, webtorrent, ...) failed or produced unusable output."""


class ResultInvalid(CtlError):
    """The run finished but its result is not valid (e.g. MPTCP was not negotiated)."""


class ParseError(CtlError):
    """Tool output could not be parsed."""


class Aborted(CtlError):
    """The run was interrupted (signal, lost host); exit code follows the signal."""

    def __init__(self, reason: str, exit_code: int = 1):
        super().__init__(reason)
        self.exit_code = exit_code


class RecordError(CtlError):
    """A run record is missing, corrupt, or of a format version this ctl cannot read."""
