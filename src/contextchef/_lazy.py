"""A package's public names imported on first use (PEP 562), in one place (base layer).

`contextchef` and `contextchef.providers` list which module provides each name; the
module is imported when the name is first read, and the value is then kept in the
package's namespace, so later reads cost nothing (benchmarks/import_time.py).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]

_IMPORTING = threading.RLock()
"""Held while a lazy name's module is imported: first reads from many threads at once
would otherwise import modules of one package that import each other in two orders at
the same time, which Python's per-module import locks refuse (``_DeadlockError``) and
which leaves the other thread a partially initialized module."""


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__`` for `exports` (module -> its names).

    Args:
        package: The package's name, for the ``AttributeError`` of an unknown name.
        exports: Each providing module's dotted name and the public names it provides.
        namespace: The package's ``globals()``, where a value read once is kept.
    """
    module_of = {name: module for module, names in exports.items() for name in names}

    def get(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        with _IMPORTING:  # one first import at a time (see `_IMPORTING`)
            value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def listing() -> list[str]:
        return sorted(set(namespace) | set(module_of))

    return get, listing
