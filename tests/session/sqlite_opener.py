"""The child process of test_store's fresh-file race, in a module of its own so that a
spawned child imports only contextchef, not the test module and its test dependencies."""

from __future__ import annotations

from typing import Any


def open_at_once(path: str, ready: Any, out: Any) -> None:
    """Wait until every opener is ready, then open the store (a write); report to `out`."""
    from contextchef import SQLiteSessionStore

    try:
        ready.wait(timeout=120)
        SQLiteSessionStore(path, timeout=60)
        out.put("ok")
    except Exception as exc:  # reported to the parent, which fails the test
        out.put(f"{type(exc).__name__}: {exc}")
