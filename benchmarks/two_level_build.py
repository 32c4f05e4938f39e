"""Cold build of the two-level index against plain BM25 on every catalog in shared/data.

Run:  python benchmarks/two_level_build.py
Tools: every catalog in shared/data pooled (7,726 tools), each file its own server (the
group level then has 19 groups; LiveMCPBench's servers are not split out here). A "cold
build" is a new `ToolIndex` answering its first `search` (tokenizing every tool, building
the bm25s corpus, and for two-level the group corpus). Best and median of 3 runs each, in
the same process, bm25 first (so the stemmer's word cache is warm for both).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from contextchef import load_catalog
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig
from contextchef.tools._tool import Tool

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))


def pooled() -> tuple[list[tuple[Tool, str]], dict[str, str]]:
    files = sorted((DATA / "retrieval").glob("*.catalog.json"))
    files += sorted((DATA / "catalogs").glob("*.json"))
    entries: list[tuple[Tool, str]] = []
    described: dict[str, str] = {}
    for path in files:
        catalog = load_catalog(path, server=path.name.split(".")[0], repair_schemas=True)
        described.update(catalog.server_descriptions)
        entries += [(t, f"{t.server}__{t.name}") for t in catalog.tools]
    return entries, described


def main() -> None:
    entries, described = pooled()
    print(f"{len(entries)} tools, {len(described)} servers, load {os.getloadavg()[0]:.1f}")
    for name in ("bm25", "two-level", "bm25", "two-level", "bm25", "two-level"):
        start = time.perf_counter()
        index = ToolIndex(entries, ranker=RankerConfig.of(name), groups=described)
        index.search(["create an issue on github"], limit=5)
        RESULTS.setdefault(name, []).append(time.perf_counter() - start)
    for name, times in RESULTS.items():
        print(
            f"{name:10} cold build + first search: best {min(times):.2f} s, "
            f"median {statistics.median(times):.2f} s"
        )


RESULTS: dict[str, list[float]] = {}

if __name__ == "__main__":
    main()
