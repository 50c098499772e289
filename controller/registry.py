"""One registry mechanism for everything ctl looks up by name: CLI command groups, shapers,
scenarios, parsers, congestion controls.

Entries are registered either as an object (`reg.add(name, obj)`, or `@reg.register(name)`
on a class) or lazily as `"module:attribute"` (`reg.lazy(name, "pkg.mod:func")`): a lazy
entry is imported on first use, so one plug-in's import problem stays local to it. A name
registered twice with a different target is a bug and raises at once. An unknown name is
the registry's `error` type (a `CtlError` subclass, so the CLI prints one line).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, TypeVar

from controller.errors import CtlError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    name: str
    target: Any            # the object, or "module:attribute" for a lazy entry
    help: str = ""

    @property
    def lazy(self) -> bool:
        return isinstance(self.target, str)


def _ref_of(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '')}:{getattr(obj, '__qualname__', '')}"


class Registry(Generic[T]):
    """Names -> objects, with lazy imports and duplicate detection."""

    def __init__(self, what: str, error: type[CtlError] = CtlError):
        self.what = what            # "scenario", "parse kind", ... for messages
        self.error = error
        self._entries: dict[str, Entry] = {}
        self._resolved: dict[str, T] = {}

    # -- registration ------------------------------------------------------------------------

    def add(self, name: str, target: T | str, help: str = "") -> None:
        old = self._entries.get(name)
        if old is not None and old.lazy and not isinstance(target, str) and old.target == _ref_of(target):
            self._resolved[name] = target   # the lazy entry's module registering its own object
            return
        if old is not None and old.target is not target and old.target != target:
            raise ValueError(f"{self.what} {name!r} registered twice ({old.target!r} and {target!r})")
        self._entries[name] = Entry(name, target, help)

    def lazy(self, name: str, ref: str, help: str = "") -> None:
        if ":" not in ref:
            raise ValueError(f"lazy {self.what} {name!r}: reference {ref!r} is not 'module:attribute'")
        self.add(name, ref, help)

    def register(self, name: str, help: str = "") -> Callable[[T], T]:
        """Decorator form: `@REGISTRY.register("dummynet")` on a class."""
        def deco(obj: T) -> T:
            self.add(name, obj, help)
            return obj
        return deco

    # -- lookup ------------------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> Iterator[Entry]:
        for name in self.names():
            yield self._entries[name]

    def help(self, name: str) -> str:
        entry = self._entries.get(name)
        if entry is None:
            raise self.error(f"unknown {self.what} {name!r} (known: {', '.join(self.names())})")
        return entry.help

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def get(self, name: str) -> T:
        entry = self._entries.get(name)
        if entry is None:
            raise self.error(f"unknown {self.what} {name!r} (known: {', '.join(self.names())})")
        if not entry.lazy:
            return entry.target
        if name not in self._resolved:
            module, _, attr = entry.target.partition(":")
            try:
                obj = getattr(importlib.import_module(module), attr)
            except ModuleNotFoundError as exc:
                if exc.name != module:
                    raise
                raise self.error(f"{self.what} {name!r} is not available in this build ({module} missing)") from None
            except AttributeError:
                raise self.error(f"{self.what} {name!r} is not available in this build "
                                 f"({module} has no {attr})") from None
            self._resolved[name] = obj
        return self._resolved[name]

    def available(self) -> list[str]:
        """Names whose target imports; a missing optional module hides its entry."""
        out = []
        for name in self.names():
            try:
                self.get(name)
            except self.error:
                continue
            out.append(name)
        return out
