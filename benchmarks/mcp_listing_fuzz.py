"""Run the MCP listing fuzz (tests/fuzz/test_mcp_listing_fuzz.py) at a large count, counting.

Unlike the test, which stops at the first failure and shrinks it, this runs every
example and sorts what went wrong into classes (the exception type and the innermost
contextchef frame): raw exceptions (anything but a `ContextChefError` out of an entry
point) and broken properties (an ``AssertionError`` of the test's checks).

    PYTHONPATH=src python benchmarks/mcp_listing_fuzz.py [--examples 30000] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fuzz")]

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from test_mcp_listing_fuzz import ARGS, feed  # noqa: E402

from contextchef import McpRules  # noqa: E402


def _where(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "contextchef" in f.filename]
    inner = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return f"{Path(inner.filename).name}:{inner.lineno} {inner.name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    found: collections.Counter[str] = collections.Counter()
    first: dict[str, str] = {}
    count = 0

    @seed(args.seed)
    @settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(*ARGS)
    def run(listing: Any, server: Any, description: Any, rules: McpRules) -> None:
        nonlocal count
        count += 1
        try:
            feed(listing.value, server.value, description.value, rules)
        except Exception as exc:  # every class is recorded; the run goes on
            key = f"{type(exc).__name__} at {_where(exc)}"
            found[key] += 1
            first.setdefault(key, f"{str(exc)[:300]} | listing={listing!r}"[:800])

    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {"examples": count, "seconds": round(seconds, 1), "classes": found, "first": first},
            indent=1,
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
