"""The ``contextchef`` command line: a thin shell over the library.

* ``contextchef plan [CATALOG ...]`` — what the tool catalog costs per turn, flat vs
  deferred, for one target (the built-in demo catalog when no file is given).
* ``contextchef search QUERY [--catalog FILE ...]`` — run ``tool_search`` as the model
  would.
* ``contextchef eval-retrieval --catalog C --queries Q`` — recall@k, MRR, nDCG@5 of tool
  search on labelled queries.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from contextchef._errors import ContextChefError, UsageError
from contextchef.deferred._meta import run_tool_search
from contextchef.history._messages import user
from contextchef.providers import TARGETS
from contextchef.search._retrieval import RANKERS, evaluate, load_queries
from contextchef.session._accounting import CacheCostModel, PlanReport
from contextchef.session._chef import ContextChef
from contextchef.tools._catalogs import Catalog, load_catalog, load_demo_catalog

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="Plan and compile LLM tool catalogs with deferred loading.",
)

_DEMO_SYSTEM = "You are a careful software engineering agent. Use tools when they help."


def _load(paths: list[Path], *, repair: bool = False) -> list[Catalog]:
    """Load catalogs; files declaring the same server name are told apart by file name."""
    if not paths:
        return [load_demo_catalog()]
    raw = [load_catalog(p, repair_schemas=repair) for p in paths]
    declared = Counter(s for c in raw for s in c.server_descriptions)
    out = []
    for path, cat in zip(paths, raw, strict=True):
        if any(declared[s] > 1 for s in cat.server_descriptions):
            cat = load_catalog(path, server=path.stem, repair_schemas=repair)
        out.append(cat)
    return out


def _chef(
    paths: list[Path],
    *,
    default_defer: bool,
    defer: list[str],
    pin: list[str],
    repair: bool = False,
) -> ContextChef:
    chef = ContextChef(default_defer=default_defer, defer=defer, pin=pin)
    for cat in _load(paths, repair=repair):
        chef.register_catalog(cat)
    return chef


_REPAIR_OPTION = typer.Option(
    "--repair-schemas",
    help="Map non-standard schema dialects (BFCL/ACEBench 'dict', 'float'...) onto JSON Schema.",
)


def _fail(exc: ContextChefError) -> None:
    text = str(exc)
    if "repair_schemas=True" in text:
        text += "\n(on the command line: --repair-schemas)"
    Console(stderr=True).print(f"[red]error:[/red] {text}", markup=False, highlight=False)
    raise typer.Exit(code=2)


@app.command()
def plan(
    catalogs: Annotated[
        list[Path] | None, typer.Argument(help="Catalog JSON files (default: the demo catalog).")
    ] = None,
    target: Annotated[str, typer.Option(help=f"One of: {', '.join(TARGETS)}.")] = "anthropic",
    defer: Annotated[
        list[str] | None, typer.Option(help="Defer tools matching this pattern.")
    ] = None,
    pin: Annotated[
        list[str] | None, typer.Option(help="Keep tools matching this resident.")
    ] = None,
    default_defer: Annotated[
        bool, typer.Option(help="Defer tools that declare nothing and match no pattern.")
    ] = True,
    history_tokens: Annotated[
        int, typer.Option(min=0, help="Cached history size for the cache cost model.")
    ] = 80_000,
    price: Annotated[
        float, typer.Option(min=0, help="Base input price, USD per million tokens.")
    ] = 3.0,
    cache_read: Annotated[float, typer.Option(min=0, help="Cache-read multiplier.")] = 0.1,
    cache_write: Annotated[float, typer.Option(min=0, help="Cache-write multiplier.")] = 1.25,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    payload_out: Annotated[
        Path | None, typer.Option(help="Write the compiled payload (one user turn) here.")
    ] = None,
    model: Annotated[str, typer.Option(help="Model name written into the payload.")] = "model",
    repair_schemas: Annotated[bool, _REPAIR_OPTION] = False,
) -> None:
    """Show what the tool catalog costs per turn, flat vs with deferred loading."""
    cache = CacheCostModel(
        history_tokens=history_tokens,
        price_per_mtok=price,
        cache_read=cache_read,
        cache_write=cache_write,
    )
    try:
        chef = _chef(
            list(catalogs or []),
            default_defer=default_defer,
            defer=list(defer or []),
            pin=list(pin or []),
            repair=repair_schemas,
        )
        report = chef.plan(target, cache=cache)
        if payload_out is not None:
            chef.set_system_prompt(_DEMO_SYSTEM)
            chef.set_history([user("Which tools can you use for this project?")])
            compiled = chef.compile(target, model=model)
            text = json.dumps(compiled.payload, ensure_ascii=False, indent=2) + "\n"
            try:
                payload_out.write_text(text, "utf-8")
            except OSError as exc:
                raise UsageError(f"cannot write {str(payload_out)!r}: {exc.strerror}") from exc
    except ContextChefError as exc:
        _fail(exc)
        return
    if as_json:
        typer.echo(json.dumps(report.to_dict(), ensure_ascii=False, sort_keys=True))
        return
    _print_plan(report)
    if payload_out is not None:
        Console().print(f"payload written to {payload_out}")


def _print_plan(r: PlanReport) -> None:
    table = Table(title=f"Tool catalog cost per turn — target {r.target}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    m = r.cache_model
    rows = [
        (
            "tools (total / direct / deferred)",
            f"{r.tools_total} / {r.tools_direct} / {r.tools_deferred}",
        ),
        ("flat tools array, chars (tokens est.)", f"{r.full_chars:,} ({r.full_tokens_est:,})"),
        (
            "resident tools array, chars (tokens est.)",
            f"{r.resident_chars:,} ({r.resident_tokens_est:,})",
        ),
        ("  deferred schemas removed, chars", f"{r.deferred_schema_chars:,}"),
        ("  meta-tools added (incl. directory), chars", f"{r.meta_tools_chars:,}"),
        (
            "  directory, chars / budget",
            f"{r.directory_chars:,} / {r.directory_budget_chars:,} ({r.directory_budget_used:.0%})",
        ),
        (
            "net saved per turn, chars (tokens est.)",
            f"{r.saved_chars_per_turn:,} ({r.saved_tokens_est_per_turn:,})",
        ),
        ("saved ratio", f"{r.saved_ratio:.1%}"),
        (
            "schema:name ratio — all / deferred",
            f"{r.schema_to_name_ratio_all:,.0f} / {r.schema_to_name_ratio_deferred:,.0f}",
        ),
        (
            f"schema:name ratio — largest ({r.largest_tool or '-'})",
            f"{r.schema_to_name_ratio_largest:,.0f}",
        ),
        (f"adding one tool at H={m.history_tokens:,} tokens, p=${m.price_per_mtok}/MTok:", ""),
        ("  naive (rewrite tools array)", f"${r.cache_naive_usd:.4f}"),
        ("  append-only", f"${r.cache_append_only_usd:.4f}"),
        ("  meta-tool deferral", f"${r.cache_meta_tool_usd:.4f}"),
        (
            "steady request, flat / deferred",
            f"${r.cache_steady_flat_usd:.4f} / ${r.cache_steady_deferred_usd:.4f}",
        ),
    ]
    for name, value in rows:
        table.add_row(name, value)
    Console().print(table)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What the tool should do.")],
    catalog: Annotated[
        list[Path] | None, typer.Option(help="Catalog JSON file (repeatable; default: demo).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Results to return.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    repair_schemas: Annotated[bool, _REPAIR_OPTION] = False,
) -> None:
    """Search the catalog as the model's tool_search would."""
    if not query.strip():
        _fail(UsageError("the query is empty; say what the tool should do"))
        return
    try:
        chef = _chef(
            list(catalog or []), default_defer=True, defer=[], pin=[], repair=repair_schemas
        )
        view = chef.view
        hits = view.index.search([query], limit=limit)
        text = run_tool_search({"queries": [query], "limit": limit}, view.index, view.config).text
    except ContextChefError as exc:
        _fail(exc)
        return
    if as_json:
        out = {
            "query": query,
            "results": [
                {"name": h.wire_name, "origin": h.tool.origin, "score": round(h.score, 4)}
                for h in hits
            ],
        }
        typer.echo(json.dumps(out, ensure_ascii=False))
        return
    typer.echo(text)


@app.command("eval-retrieval")
def eval_retrieval(
    catalog: Annotated[Path, typer.Option(help="Benchmark catalog JSON (tools pool).")],
    queries: Annotated[Path, typer.Option(help="Labelled queries, JSON lines.")],
    ranker: Annotated[str, typer.Option(help="Ranker: bm25 (the default).")] = "bm25",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Score tool search on labelled queries: recall@1, recall@5, MRR, nDCG@5."""
    try:
        if ranker not in RANKERS:
            raise UsageError(f"unknown ranker {ranker!r}; valid: {', '.join(sorted(RANKERS))}")
        cat = load_catalog(catalog, repair_schemas=True)
        labelled = load_queries(queries)
        names = {t.name for t in cat.tools}
        usable = [q for q in labelled if any(g & names for g in q.groups)]
        if not usable:
            raise UsageError(
                f"none of the {len(labelled)} queries in {str(queries)!r} has a relevant tool "
                f"in {str(catalog)!r}; check that the files belong together"
            )
        metrics = evaluate(labelled, RANKERS[ranker](cat))
    except ContextChefError as exc:
        _fail(exc)
        return
    out = {"ranker": ranker, **metrics, "queries": int(metrics["queries"])}
    if as_json:
        typer.echo(json.dumps(out, sort_keys=True))
        return
    table = Table(title=f"Tool retrieval — {catalog.name}, ranker {ranker}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("queries", "recall@1", "recall@5", "mrr", "ndcg@5"):
        table.add_row(key, str(out[key]))
    Console().print(table)


def main() -> None:
    """Entry point of the ``contextchef`` script."""
    app()
