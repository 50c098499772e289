"""Per-host results, as nornir keeps them: what happened on each host, the exception kept,
and the caller decides whether a failure on one host aborts the whole operation.

    results = await gather_hosts(hosts, connect)     # never raises for a host's failure
    results.raise_on_error()                         # ...unless the caller wants that
    for host, r in results.failed.items(): ...       # or looks at each failure
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, Iterable, TypeVar

from controller.errors import CtlError, SSHError

T = TypeVar("T")


@dataclass
class HostResult(Generic[T]):
    host: str
    value: T | None = None
    exception: BaseException | None = None

    @property
    def failed(self) -> bool:
        return self.exception is not None

    def describe(self) -> str:
        """`host: what went wrong` (one line), or `host: ok`."""
        if self.exception is None:
            return f"{self.host}: ok"
        exc = self.exception
        text = exc.one_line() if isinstance(exc, CtlError) else f"{type(exc).__name__}: {exc}"
        return text if text.startswith(f"{self.host}:") else f"{self.host}: {text}"


class HostsUnreachable(SSHError):
    """Several hosts could not be reached; every one is named with its reason."""

    def __init__(self, failures: list[SSHError]):
        hosts = ", ".join(e.host for e in failures)
        CtlError.__init__(self, f"{len(failures)} hosts unreachable: " + "; ".join(e.one_line() for e in failures))
        self.host = hosts
        self.failures = failures


class MultiResult(dict[str, HostResult[T]]):
    """host -> HostResult, in the order the hosts were given."""

    @property
    def failed(self) -> dict[str, HostResult[T]]:
        return {h: r for h, r in self.items() if r.failed}

    @property
    def ok(self) -> bool:
        return not self.failed

    def values_by_host(self) -> dict[str, T | None]:
        return {h: r.value for h, r in self.items() if not r.failed}

    def problems(self) -> list[str]:
        return [r.describe() for r in self.failed.values()]

    def raise_on_error(self) -> None:
        """Raise when any host failed: a bug (not a CtlError) as itself; one failure as
        itself; several unreachable hosts as one error naming all of them."""
        errors = [r.exception for r in self.failed.values() if r.exception is not None]
        if not errors:
            return
        for e in errors:
            if not isinstance(e, CtlError):
                raise e
        if len(errors) == 1:
            raise errors[0]
        if all(isinstance(e, SSHError) for e in errors):
            raise HostsUnreachable(errors)  # type: ignore[arg-type]
        raise errors[0]


async def gather_hosts(hosts: Iterable[str], fn: Callable[[str], Awaitable[T]]) -> MultiResult[T]:
    """Run `fn(host)` for every host at once; every outcome is kept, none is raised
    (cancellation excepted: it propagates)."""
    hosts = list(hosts)
    outcomes: list[Any] = await asyncio.gather(*(fn(h) for h in hosts), return_exceptions=True)
    out: MultiResult[T] = MultiResult()
    for h, o in zip(hosts, outcomes, strict=True):
        if isinstance(o, asyncio.CancelledError):
            raise o
        out[h] = HostResult(h, exception=o) if isinstance(o, BaseException) else HostResult(h, value=o)
    return out
