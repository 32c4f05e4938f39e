"""Bounded in-process caches (base layer): one LRU map, and one `clear_caches` for tests.

Every process-wide or per-object memo of the library is an `LruMap` (a thread-safe map
that forgets its least recently used entry past `LruMap.size`) or a function wrapped by
`lru_cache` (``functools.lru_cache``). Both register themselves, so `clear_caches`
empties them all: a test that needs a cold cache calls it instead of reaching into a
module's private dict.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["LruMap", "clear_caches", "lru_cache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")

_maps: weakref.WeakSet[LruMap[Any, Any]] = weakref.WeakSet()
_functions: list[functools._lru_cache_wrapper[Any]] = []


class LruMap(Generic[K, V]):
    """A map of at most `size` entries that forgets the least recently used one.

    Every method holds the map's own lock, so it may be shared across threads; a read
    (`get`) or a write marks the entry used. ``None`` values cannot be told from a miss:
    store something else.
    """

    __slots__ = ("__weakref__", "_data", "_lock", "size")

    def __init__(self, size: int) -> None:
        """A map keeping at most `size` entries (at least 1)."""
        self.size = max(1, size)
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        _maps.add(self)

    def get(self, key: K) -> V | None:
        """The value kept for `key` (now the most recently used), or None."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Keep `value` for `key` (replacing any), forgetting the oldest entries past `size`."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._trim()

    def setdefault(self, key: K, value: V) -> V:
        """The value kept for `key`, keeping `value` first if there is none.

        Two threads that built a value for the same key both get the first one kept.
        """
        with self._lock:
            kept = self._data.setdefault(key, value)
            self._data.move_to_end(key)
            self._trim()
            return kept

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def _trim(self) -> None:
        while len(self._data) > self.size:
            self._data.popitem(last=False)


def lru_cache(maxsize: int | None) -> Callable[[Callable[..., T]], functools._lru_cache_wrapper[T]]:
    """``functools.lru_cache(maxsize)``, registered for `clear_caches`."""

    def wrap(function: Callable[..., T]) -> functools._lru_cache_wrapper[T]:
        cached = functools.lru_cache(maxsize=maxsize)(function)
        _functions.append(cached)
        return cached

    return wrap


def clear_caches() -> None:
    """Empty every `LruMap` alive and every `lru_cache` function (for tests)."""
    for cache in list(_maps):
        cache.clear()
    for function in _functions:
        function.cache_clear()
