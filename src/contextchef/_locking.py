"""One re-entrant lock per object, applied to every method of a class (foundation layer).

`synchronized` is how a `contextchef.ContextChef` session is safe from several threads:
every method and property getter the class defines runs under the instance's
``threading.RLock`` (the attribute named by `LOCK`, made in ``__init__``). Re-entrant, so
hooks and tool functions may call back into the object from the thread that holds it.

A coroutine method cannot hold a thread lock across an ``await``: a sync tool function
that `asyncio.to_thread` runs and that calls the object back would wait for the loop's
thread, which waits for it. So a coroutine method holds the lock for each synchronous
stretch of its body (every step between two suspensions) and releases it at every
``await`` that suspends: no update is lost, and other threads may act at those points.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["LOCK", "synchronized"]

LOCK = "_lock"
"""The instance attribute holding the `threading.RLock` (set it in ``__init__``)."""

T = TypeVar("T")

_CO_COROUTINE = 0x80
"""``inspect.CO_COROUTINE``: the code flag of an ``async def`` (read here without importing
`inspect`, which costs more than the rest of the session facade's import)."""


class _Stretches(Awaitable[Any]):
    """Runs `coro` holding `lock` for each step, never while it is suspended."""

    def __init__(self, coro: Coroutine[Any, Any, Any], lock: threading.RLock) -> None:
        self._coro, self._lock = coro, lock

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, sent, thrown = self._coro, None, None
        while True:
            with self._lock:
                try:
                    step = coro.send(sent) if thrown is None else coro.throw(thrown)
                except StopIteration as stop:
                    return stop.value
            try:
                sent, thrown = (yield step), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # CancelledError included: passed on to `coro`
                sent, thrown = None, exc


def _locked(func: Callable[..., Any]) -> Callable[..., Any]:
    if func.__code__.co_flags & _CO_COROUTINE:  # as inspect.iscoroutinefunction

        @functools.wraps(func)
        async def stretches(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await _Stretches(func(self, *args, **kwargs), getattr(self, LOCK))

        return stretches

    @functools.wraps(func)
    def held(self: Any, *args: Any, **kwargs: Any) -> Any:
        with getattr(self, LOCK):
            return func(self, *args, **kwargs)

    return held


def synchronized(cls: type[T]) -> type[T]:
    """A class decorator: every method and property getter of `cls` holds the lock.

    Dunder methods (``__init__`` among them) are left as they are; see the module doc.
    """
    for name, member in list(vars(cls).items()):
        if name.startswith("__"):
            continue
        if isinstance(member, property) and member.fget is not None:
            setattr(cls, name, property(_locked(member.fget), doc=member.__doc__))
        elif isinstance(member, types.FunctionType):
            setattr(cls, name, _locked(member))
    return cls
