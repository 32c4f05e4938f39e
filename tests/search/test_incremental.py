"""Runtime tools at scale (issue 14, item 2): the registry places a new tool in order
without re-sorting, and the index scores added tools like before, whatever the path.

No timing here: benchmarks/session_scale.py measures the cost.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path

from contextchef import ContextChef, DeferredConfig, ToolCall, load_catalog
from contextchef.search._index import ToolIndex, _document
from contextchef.tools._registry import Registry, _sort_key
from contextchef.tools._tool import Tool


def _tools(catalog_paths: list[Path]) -> list[Tool]:
    return [t for p in catalog_paths for t in load_catalog(p, server=p.stem).tools]


def _runtime(name: str, description: str) -> Tool:
    schema = {"type": "object", "properties": {"target": {"type": "string"}}}
    return Tool(name=name, description=description, input_schema=schema, source="runtime")


RUNTIME = [
    _runtime("zeta_deploy", "Deploy the zeta service to a cluster."),
    _runtime("alpha_report", "Report alpha telemetry for a cluster."),
    _runtime("mid_cache_flush", "Flush the cache of a cluster node."),
    _runtime("alpha_deploy", "Deploy alpha builds."),
]


def test_registry_order_and_fingerprint_match_a_full_sort(catalog_paths: list[Path]) -> None:
    base = _tools(catalog_paths)
    one_by_one = Registry()
    one_by_one.add(base)
    for tool in RUNTIME:  # each a small batch: inserted in place
        one_by_one.add([tool])
    at_once = Registry()
    at_once.add([*RUNTIME, *base])  # a large batch: sorted whole
    assert one_by_one.tools == at_once.tools == tuple(sorted(at_once.tools, key=_sort_key))
    # the fingerprint is the SHA-256 of the per-tool digests in registry order (the value
    # snapshots record), computed here independently of the registry's cache
    h = hashlib.sha256()
    for tool in at_once.tools:
        h.update(at_once._tool_digest(tool, at_once.wire_name_for(tool)))
    assert one_by_one.fingerprint() == at_once.fingerprint() == h.hexdigest()
    assert one_by_one.fingerprint(list(at_once.tools)) == h.hexdigest()


def _reference_scores(index: ToolIndex, query: str, entries: list[tuple[Tool, str]]) -> list[float]:
    """BM25 of the added documents against the base corpus, as a plain loop (the old code)."""
    from contextchef.search._index import tokenize

    corpus = index._corpus.get()  # type: ignore[union-attr]
    docs = [_document(t, w) or [w.lower()] for t, w in entries]
    counts = [(Counter(d), len(d)) for d in docs]
    tokens = tokenize(query)
    out = [0.0] * len(docs)
    total = corpus.num_docs + len(docs)
    k1, b = corpus.bm25.k1, corpus.bm25.b
    for token in dict.fromkeys(tokens):
        vid = corpus.vocab.get(token)
        df = int(corpus.doc_freq[vid]) if vid is not None else 0
        df += sum(1 for c, _ in counts if token in c)
        idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
        for j, (c, length) in enumerate(counts):
            tf = c.get(token, 0)
            if tf:
                norm = k1 * (1 - b + b * length / corpus.avg_len)
                out[j] += idf * tf / (tf + norm) * tokens.count(token)
    return out


def test_added_tools_score_the_same_whichever_way_the_index_grew(
    catalog_paths: list[Path],
) -> None:
    base = [(t, t.name) for t in _tools(catalog_paths)]
    added = [(t, t.name) for t in RUNTIME]
    queries = ["deploy a cluster", "alpha telemetry report", "flush cache", "create an issue"]

    searched_first = ToolIndex(base)
    searched_first.search(["warm"], limit=1)  # corpus built: extras tokenized on extend
    grown = searched_first
    for entry in added:
        grown = grown.extended([entry])
    lazy = ToolIndex(base).extended(added[:2]).extended(added[2:])  # tokenized on search
    for query in queries:
        a = grown.search([query], limit=10)
        b = lazy.search([query], limit=10)
        assert [(h.wire_name, h.score) for h in a] == [(h.wire_name, h.score) for h in b]
        want = _reference_scores(grown, query, added)
        got = {h.wire_name: h.score for h in grown.search([query], limit=len(base) + 4)}
        for (tool, wire), score in zip(added, want, strict=True):
            assert math.isclose(got.get(wire, 0.0), score, rel_tol=1e-12), (query, tool.name)
    assert grown.search(["deploy cluster"], limit=2)[0].wire_name in ("zeta_deploy", "alpha_deploy")


def test_runtime_tools_in_a_large_session_are_found(catalog_paths: list[Path]) -> None:
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(always_meta_tools=True))
    for path in catalog_paths:
        chef.register_catalog(load_catalog(path, server=path.stem))
    chef.execute(ToolCall(id="w", name="tool_search", arguments={"queries": ["warm"]}))
    for i, tool in enumerate(RUNTIME):
        chef.register_runtime_tool(tool)
        found = chef.execute(
            ToolCall(id=f"q{i}", name="tool_search", arguments={"tool_names": [tool.name]})
        )
        assert found.loaded == (tool.name,)
    order = [t.name for t in chef.registry.tools if t.source == "runtime"]
    assert order == sorted(t.name for t in RUNTIME)
    ranked = chef.execute(
        ToolCall(id="r", name="tool_search", arguments={"queries": ["alpha telemetry"]})
    )
    assert ranked.loaded[0] == "alpha_report"
