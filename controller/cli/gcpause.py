"""The cyclic garbage collector paused while the `ctl` program starts (issue 28).

Importing what a command needs creates some 60,000 long-lived objects (modules, classes,
functions, pydantic's schemas) and almost no garbage: the collector's passes over them while
they are created, a full one among them, were ~10 % of `ctl run`'s start-up CPU
(bench/startup_cpu.py) and found a few hundred objects to free. So the program (`entry()`, not
`main()` called inside another process such as the tests) pauses the collector when it starts;
when the command's start-up ends (before its handler runs; `ctl run` once its imports are done,
before it waits for the rack) what exists is frozen (`gc.freeze`: never scanned again, so the
run's own collections do not pass over the start-up's objects either) and collection resumes.
Nothing waits on the network or for another process while the collector is paused.
"""
from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop automatic collection until `resume()` (only when it is on: a caller that turned it
    off keeps it off)."""
    global _paused
    if gc.isenabled() and not _paused:
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what the start-up created and collect again as usual; nothing when not paused
    (called at every end of a start-up, so more than once)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def paused() -> bool:
    return _paused
