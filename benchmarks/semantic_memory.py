"""Resident memory of embedding tool texts, by onnxruntime memory arena and batch size.

Run:  python benchmarks/semantic_memory.py ARENA BATCH   (ARENA 1 or 0; one setting per
process, since RSS never shrinks back). Embeds the first 300 LiveMCPBench tool texts
(long descriptions, up to 256 tokens) with the packaged model and prints the RSS growth
in MB and the time. The library runs with the arena off and batches of 8.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import onnxruntime as ort

from contextchef import load_catalog
from contextchef.search import _model
from contextchef.search._rankers import embedding_text

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONTEXTCHEF_SHARED_DATA", REPO.parent / "shared" / "data"))


def rss_mb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return -1


def main() -> None:
    arena, batch = sys.argv[1] == "1", int(sys.argv[2])
    real = ort.InferenceSession

    def session(path: str, sess_options: ort.SessionOptions, **kw: object) -> object:
        sess_options.enable_cpu_mem_arena = arena  # override the library's setting
        return real(path, sess_options=sess_options, **kw)

    ort.InferenceSession = session  # the encoder creates its session through this name
    catalog = load_catalog(DATA / "retrieval" / "livemcpbench.catalog.json", repair_schemas=True)
    texts = [embedding_text(t) for t in catalog.tools][:300]
    encoder = _model.Encoder()
    encoder.encode(["warm up"])
    before = rss_mb()
    start = time.perf_counter()
    encoder.encode(texts, batch=batch)
    print(
        f"arena {arena} batch {batch}: RSS +{rss_mb() - before} MB, "
        f"{time.perf_counter() - start:.1f} s for {len(texts)} texts"
    )


if __name__ == "__main__":
    main()
