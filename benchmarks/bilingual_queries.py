"""The same request in English and in Chinese: alone, as a list, as one string.

Run:  python benchmarks/bilingual_queries.py [--rankers bm25,hybrid]
Needs the crosslingual extra (pip install -e ".[crosslingual]"); ``hybrid`` needs the
semantic extra too.

``tool_search``'s description used to tell the model to write every query in English and
Chinese; on an English catalog the Chinese half then outvoted the English one (issue 28,
break-it round 22). This runs the 30 newcomer probes (benchmarks/data/newcomer_probes
.jsonl and its Chinese translation newcomer_probes_zh.jsonl, same accepted tools) against
the real MCP catalogs (English, 270 tools) in four forms: en alone, zh alone,
``[en, zh]`` as two queries, ``"en zh"`` as one query; each with the request rule of
`contextchef.search._scripts` ("after") and without it ("before": the queries' scores
summed as they were, by patching `split_request` to find no split), in the same run.
Then the break-it probe's cases on the GitHub catalog (rank of ``github__create_issue``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from semantic_retrieval import DATA, PROBES, SETS, load_set, probe_catalog

from contextchef import load_catalog
from contextchef.search import _scripts
from contextchef.search._index import ToolIndex
from contextchef.search._rankers import RankerConfig
from contextchef.search._retrieval import evaluate, load_queries

FORMS: dict[str, Callable[[str, str], list[str]]] = {
    "en": lambda en, zh: [en],
    "zh": lambda en, zh: [zh],
    "[en, zh]": lambda en, zh: [en, zh],
    '"en zh"': lambda en, zh: [f"{en} {zh}"],
}
GITHUB_CASES = (
    ["create issue"],
    ["创建问题"],
    ["create issue", "创建问题"],
    ["create issue 创建问题"],
    ["open a new issue"],
    ["open a new issue", "新建问题"],
)


def _index(tools: Sequence[object], kind: str) -> ToolIndex:
    index = ToolIndex(
        [(t, t.name) for t in tools],  # type: ignore[attr-defined]
        ranker=RankerConfig(kind=kind, background=False),  # type: ignore[arg-type]
    )
    index.wait_for_vectors()
    return index


def _before(on: bool) -> None:
    """Switch the request rule off (``before``) or back on."""
    if on:
        _scripts.split_request = lambda queries, *, english: None  # type: ignore[assignment]
    else:
        _scripts.split_request = SPLIT  # type: ignore[assignment]


SPLIT = _scripts.split_request


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rankers", default="bm25")
    parser.add_argument("--weight", type=float, default=_scripts.TRANSLATION_WEIGHT)
    parser.add_argument("--sets", action="store_true", help="the retrieval sets' dev split")
    args = parser.parse_args()
    _scripts.TRANSLATION_WEIGHT = args.weight
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores; uptime: {load}"
    )
    command = f"--rankers {args.rankers} --weight {args.weight}"
    print(f"Command: python benchmarks/bilingual_queries.py {command}")
    if args.sets:
        return retrieval_sets(args.rankers.split(","))
    en = {q.id: q for q in load_queries(PROBES)}
    zh = {q.id: q for q in load_queries(PROBES.with_name("newcomer_probes_zh.jsonl"))}
    ids = [i for i in en if i in zh]
    tools = list(probe_catalog().tools)
    github = list(load_catalog(DATA / "catalogs" / "github.json").tools)
    github = [t.replace(name=f"{t.server}__{t.name}") for t in github]
    print("\n| ranker | form | rule | recall@1 | recall@5 | MRR |")
    print("|---|---|---|---:|---:|---:|")
    for kind in args.rankers.split(","):
        index = _index(tools, kind)
        for form, make in FORMS.items():
            asked = [dataclasses.replace(en[i], query=i) for i in ids]
            for rule in ("before", "after"):
                _before(rule == "before")
                m = evaluate(
                    asked,
                    lambda key, depth, index=index, make=make: [
                        h.wire_name
                        for h in index.search(make(en[key].query, zh[key].query), limit=depth)
                    ],
                )
                _before(False)
                print(
                    f"| {kind} | {form} | {rule} | "
                    f"{m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['mrr']:.3f} |"
                )
        gindex = _index(github, kind)
        for rule in ("before", "after"):
            _before(rule == "before")
            for queries in GITHUB_CASES:
                names = [h.wire_name for h in gindex.search(queries, limit=50)]
                at = (
                    names.index("github__create_issue") + 1
                    if "github__create_issue" in names
                    else None
                )
                print(
                    f"  github {kind} {rule}: {queries} -> create_issue rank {at}; top: {names[:2]}"
                )
            _before(False)


def retrieval_sets(kinds: list[str]) -> None:
    """Every retrieval set's dev split, before and after the rule, one query per item."""
    print(
        "\n| set | ranker | dev queries | touched | recall@1 before | after "
        "| recall@5 before | after |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in [s for s in SETS if s != "newcomer_probes"]:
        catalog, queries = load_set(name)
        dev = [q for q in queries if q.split == "dev"]
        for kind in kinds:
            index = _index(list(catalog.tools), kind)
            got: dict[str, dict[str, list[str]]] = {}
            for rule in ("before", "after"):
                _before(rule == "before")
                got[rule] = {
                    q.query: [h.wire_name for h in index.search([q.query], limit=100)] for q in dev
                }
                _before(False)
            m = {
                rule: evaluate(dev, lambda q, d, ranked=ranked: ranked[q][:d])
                for rule, ranked in got.items()
            }
            touched = sum(1 for q in dev if got["before"][q.query] != got["after"][q.query])
            print(
                f"| {name} | {kind} | {len(dev)} | {touched} | {m['before']['recall@1']:.3f} | "
                f"{m['after']['recall@1']:.3f} | {m['before']['recall@5']:.3f} | "
                f"{m['after']['recall@5']:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
