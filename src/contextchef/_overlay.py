"""`Overlay`: a private, writable layer over a shared read-only mapping (issue 14).

Sessions over one catalog share its registry and view dicts (tens of thousands of
entries). A session that adds a few runtime tools writes them to its own small top layer
instead of copying the shared dicts, so adding one tool costs O(1) in each mapping, not
O(catalog). Iteration order is the order a dict would have after the same writes: the
base's keys in place (overwritten ones included), then the keys new in the top layer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import TypeVar

__all__ = ["Overlay", "layered"]

K = TypeVar("K")
V = TypeVar("V")


class Overlay(MutableMapping[K, V]):
    """`top` over `base`; writes and deletions never touch `base`.

    Args:
        base: The shared mapping (never changed through this object).
        top: This overlay's own entries (taken as is, not copied).
    """

    __slots__ = ("_base", "_hidden", "_new", "_top")

    def __init__(self, base: Mapping[K, V], top: dict[K, V] | None = None) -> None:
        self._base = base
        self._top: dict[K, V] = {} if top is None else top
        self._hidden: set[K] = set()  # base keys deleted through this overlay
        self._new = sum(1 for k in self._top if k not in base)  # top keys not in base

    @property
    def base(self) -> Mapping[K, V]:
        """The shared mapping underneath."""
        return self._base

    @property
    def top(self) -> Mapping[K, V]:
        """This overlay's own entries."""
        return self._top

    def _counted(self, key: K) -> bool:
        """Whether a top entry for `key` adds to the base's count (new or re-added)."""
        return key not in self._base or key in self._hidden

    def __getitem__(self, key: K) -> V:
        if key in self._top:
            return self._top[key]
        if key in self._hidden:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._top or (key in self._base and key not in self._hidden)

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self._top and self._counted(key):
            self._new += 1
        self._top[key] = value

    def __delitem__(self, key: K) -> None:
        if key not in self:
            raise KeyError(key)
        if key in self._top:
            self._new -= self._counted(key)
            del self._top[key]
        if key in self._base:
            self._hidden.add(key)  # a base key deleted, even if set again later

    def __iter__(self) -> Iterator[K]:
        hidden, top = self._hidden, self._top
        for key in self._base:  # kept base keys stay in place, as in a dict
            if key not in hidden:
                yield key
        for key in top:  # then new keys, and deleted-then-set ones, in write order
            if self._counted(key):
                yield key

    def __len__(self) -> int:
        return len(self._base) - len(self._hidden) + self._new


def layered(mapping: Mapping[K, V], items: Mapping[K, V]) -> Overlay[K, V]:
    """`mapping` with `items` written on top, sharing `mapping`'s base (O(len(top))).

    A new overlay is returned; `mapping` (and an overlay's own top layer) is unchanged.
    """
    if isinstance(mapping, Overlay) and not mapping._hidden:
        return Overlay(mapping.base, {**mapping.top, **items})
    return Overlay(mapping, dict(items))
