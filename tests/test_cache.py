"""`contextchef._cache`: the one bounded LRU map and `clear_caches`."""

from __future__ import annotations

import threading

from contextchef._cache import LruMap, clear_caches, lru_cache


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: LruMap[str, int] = LruMap(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2
    assert cache.setdefault("a", 9) == 1  # kept, not replaced
    assert cache.setdefault("d", 4) == 4 and "c" not in cache
    assert cache.get("missing") is None


def test_clear_caches_empties_maps_and_functions() -> None:
    calls: list[int] = []

    @lru_cache(maxsize=4)
    def double(n: int) -> int:
        calls.append(n)
        return 2 * n

    cache: LruMap[int, int] = LruMap(4)
    cache.put(1, 1)
    assert double(2) == double(2) == 4 and calls == [2]
    clear_caches()
    assert len(cache) == 0
    assert double(2) == 4 and calls == [2, 2]


def test_threads_share_one_value_per_key() -> None:
    cache: LruMap[int, object] = LruMap(8)
    kept: list[object] = []

    def work() -> None:
        kept.append(cache.setdefault(1, object()))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(k) for k in kept}) == 1 and len(cache) <= 8
