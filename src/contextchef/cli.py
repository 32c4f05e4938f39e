"""The ``contextchef`` command line: a thin shell over the library.

* ``contextchef plan [CATALOG ...]`` — what the tool catalog costs per turn, flat vs
  deferred, for one target (the built-in demo catalog when no file is given), and per
  disclosure strategy that fits the target and model, with what ``auto`` picks.
* ``contextchef search QUERY [--catalog FILE ...]`` — run ``tool_search`` as the model
  would.
* ``contextchef eval-retrieval --catalog C --queries Q`` — recall@k, MRR, nDCG@5 of tool
  search on labelled queries.
* ``contextchef replay TRANSCRIPT ...`` — replay recorded conversations per strategy:
  tokens, shared prefix, cache read/write and cost per request
  (`contextchef.analysis.replay`).

``plan`` and ``search`` also read live MCP servers: ``--mcp "CMD ARGS"`` (stdio) and
``--mcp-url URL`` (streamable HTTP), both repeatable (`contextchef.mcp`, the ``mcp`` extra).

``search`` and ``eval-retrieval`` take ``--ranker`` ``bm25``, ``semantic``, ``hybrid``,
``hybrid-rrf``, ``two-level`` or ``hybrid-two-level``; all but ``bm25`` and ``two-level``
need the ``semantic`` extra and embed the catalog before the first query.
For the two-level rankers, ``eval-retrieval`` puts benchmark tools in the groups their
file records (servers, classes: `contextchef.search._retrieval.grouped`).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from contextchef._cli_io import Console, echo, main_guard
from contextchef._errors import ContextChefError, UsageError, json_reason
from contextchef.analysis._accounting import CacheCostModel, PlanReport, catalog_plan
from contextchef.analysis._plan import StrategyPlan, strategy_plan
from contextchef.deferred._meta import DeferredConfig, run_tool_search
from contextchef.history._messages import user
from contextchef.providers import TARGETS, get_adapter
from contextchef.providers._base import SchemaReport
from contextchef.search._rankers import RankerConfig
from contextchef.search._retrieval import (
    RANKERS,
    evaluate,
    load_benchmark_catalog,
    load_queries,
)
from contextchef.session._chef import ContextChef
from contextchef.tools._catalogs import Catalog, load_catalog, load_demo_catalog

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="Plan and compile LLM tool catalogs with deferred loading.",
)

_DEMO_SYSTEM = "You are a careful software engineering agent. Use tools when they help."
_DEMO_TASK = "Which tools can you use for this project?"


def _default_model(target: str) -> str:
    """``plan --model`` when not given: the target's own (`Profile.default_model`)."""
    try:
        return get_adapter(target).profile.default_model
    except ContextChefError:  # an unknown target: the plan below names it
        return "model"


def _load(paths: list[Path], *, repair: bool = False, live: Any = None) -> list[Catalog]:
    """Load catalogs; files declaring the same server name are told apart by file name.

    `live`: (``--mcp`` command lines, ``--mcp-url`` URLs): MCP servers read now.
    """
    servers: list[Catalog] = []
    if live and any(live):
        from contextchef.mcp._cli import live_catalogs  # the mcp extra, only when asked

        servers = live_catalogs(*live)
    if not paths:
        return servers or [load_demo_catalog()]
    raw = [load_catalog(p, repair_schemas=repair) for p in paths]
    declared = Counter(s for c in raw for s in c.server_descriptions)
    out = []
    for path, cat in zip(paths, raw, strict=True):
        if any(declared[s] > 1 for s in cat.server_descriptions):
            cat = load_catalog(path, server=path.stem, repair_schemas=repair)
        out.append(cat)
    return [*out, *servers]


def _session(
    catalogs: list[Catalog],
    *,
    default_defer: bool,
    defer: list[str],
    pin: list[str],
    ranker: str = "bm25",
) -> ContextChef:
    """A new session with `catalogs` registered (a semantic ranker embeds in the foreground)."""
    config = dataclasses.replace(RankerConfig.of(ranker), background=False)
    chef = ContextChef(
        default_defer=default_defer, defer=defer, pin=pin, deferred=DeferredConfig(ranker=config)
    )
    for cat in catalogs:
        chef.register_catalog(cat)
    return chef


_RANKER_OPTION = typer.Option(
    help="Ranker: bm25 (default), semantic, hybrid, hybrid-rrf, two-level or "
    "hybrid-two-level (all but bm25 and two-level need the semantic extra: "
    'pip install "contextchef\\[semantic]").'
)

_MCP_OPTION = typer.Option(
    "--mcp",
    help='A live MCP server over stdio: "CMD ARGS" (repeatable; needs the mcp extra).',
)
_MCP_URL_OPTION = typer.Option(
    "--mcp-url", help="A live MCP server over streamable HTTP (repeatable; the mcp extra)."
)
_REPAIR_OPTION = typer.Option(
    "--repair-schemas",
    help="Map non-standard schema dialects (BFCL/ACEBench 'dict', 'float'...) onto JSON Schema.",
)


def _dumps(value: Any, **options: Any) -> str:
    """JSON text for ``--json``: strict JSON, never NaN or Infinity (exit 2 instead)."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:
        _fail(UsageError(f"the result cannot be JSON (NaN, Infinity): {json_reason(exc)}"))
        raise  # not reached: _fail exits


def _fail(exc: ContextChefError | RecursionError) -> None:
    """Print one ``error: ...`` line (stderr) and exit with code 2.

    A RecursionError comes from input nested too deeply to decode or walk (JSON files
    thousands of levels deep): every command reports it like any other bad input.
    """
    if isinstance(exc, RecursionError):
        exc = UsageError(
            "the input is nested too deeply to process (JSON nested thousands of levels "
            "deep); give a recording, catalog or payload of ordinary depth"
        )
    text = str(exc)
    if "repair_schemas=True" in text:
        text += "\n(on the command line: --repair-schemas)"
    Console(stderr=True, soft_wrap=True).print(
        Text.assemble(("error:", "red"), " ", text), highlight=False
    )
    raise typer.Exit(code=2)


_CACHE_READ = typer.Option(
    min=0, help="Cache-read multiplier (default: the model's, see docs/guides/replay.md)."
)
_CACHE_WRITE = typer.Option(
    min=0, help="Cache-write multiplier (default: the model's for the lifetime --ttl)."
)
_TTL = typer.Option(
    help="Cache lifetime writes get: 5m or 1h (Anthropic), 30m or 12h (OpenAI gpt-5.6+); "
    "default: the model's."
)


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
    cache_read: Annotated[float | None, _CACHE_READ] = None,
    cache_write: Annotated[float | None, _CACHE_WRITE] = None,
    ttl: Annotated[str | None, _TTL] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    payload_out: Annotated[
        Path | None, typer.Option(help="Write the compiled payload (one user turn) here.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Model: its rules decide which strategies fit and what auto picks; written "
            "into --payload-out. Default: a current model of the target (its profile's "
            "default_model)."
        ),
    ] = None,
    repair_schemas: Annotated[bool, _REPAIR_OPTION] = False,
    mcp: Annotated[list[str] | None, _MCP_OPTION] = None,
    mcp_url: Annotated[list[str] | None, _MCP_URL_OPTION] = None,
) -> None:
    """Show what the tool catalog costs per turn, flat vs deferred, and per strategy."""
    model = model or _default_model(target)
    try:
        cache = CacheCostModel.for_model(
            target,
            model,
            history_tokens=history_tokens,
            price_per_mtok=price,
            cache_read=cache_read,
            cache_write=cache_write,
            ttl=ttl,
        )
        live = (list(mcp or []), list(mcp_url or []))
        loaded = _load(list(catalogs or []), repair=repair_schemas, live=live)

        def session() -> ContextChef:
            return _session(
                loaded, default_defer=default_defer, defer=list(defer or []), pin=list(pin or [])
            )

        chef = session()
        report = catalog_plan(chef, target, cache=cache)
        reports = [r for r in chef.schema_reports if r.target == target]
        strategies = strategy_plan(
            session,
            target,
            model,
            tool=report.largest_tool,
            cache=cache,
            system=_DEMO_SYSTEM,
            task=_DEMO_TASK,
        )
        if payload_out is not None:
            chef.set_system_prompt(_DEMO_SYSTEM)
            chef.set_history([user(_DEMO_TASK)])
            compiled = chef.compile(target, model=model)
            try:
                text = json.dumps(compiled.payload, ensure_ascii=False, indent=2, allow_nan=False)
            except ValueError as exc:  # strict JSON only, never NaN or Infinity
                raise UsageError(
                    f"the payload cannot be written as JSON: {json_reason(exc)}"
                ) from exc
            text += "\n"
            try:
                payload_out.write_text(text, "utf-8")
            except OSError as exc:
                raise UsageError(f"cannot write {str(payload_out)!r}: {exc.strerror}") from exc
    except (ContextChefError, RecursionError) as exc:
        _fail(exc)
        return
    if as_json:
        out = {**report.to_dict(), **strategies.to_dict()}
        out["schema_reports"] = [dataclasses.asdict(r) for r in reports]
        echo(_dumps(out, ensure_ascii=False, sort_keys=True))
        return
    _print_plan(report)
    _print_strategies(strategies, report)
    _print_schema_reports(
        target, reports, [chef.wire_name(r.tool, server=r.server) for r in reports]
    )
    if payload_out is not None:
        Console().print(f"payload written to {payload_out}")


_SHOWN_REPORTS = 10
"""Tools whose schema changes `plan` lists (all of them are in ``--json``)."""


def _print_schema_reports(target: str, reports: list[SchemaReport], wires: list[str]) -> None:
    """What the target's schema dialect drops or rewrites, per tool (Gemini's subset)."""
    if not reports:
        return
    table = Table(
        title=f"Schema keywords {target} does not take — {len(reports)} tools "
        "(the gate still validates the full schema)"
    )
    table.add_column("tool")
    table.add_column("changes")
    for r, name in list(zip(reports, wires, strict=True))[:_SHOWN_REPORTS]:
        table.add_row(name, "\n".join([*r.changes, *(f"$ref {x}" for x in r.refs_resolved)]))
    Console().print(table)
    if len(reports) > _SHOWN_REPORTS:
        Console().print(f"... and {len(reports) - _SHOWN_REPORTS} more tools (--json lists all)")


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
    console = Console()
    console.print(table)
    ttl = f" ({m.ttl})" if m.ttl else ""
    console.print(
        f"prices: read {m.cache_read}x, write {m.cache_write}x{ttl}, minimum "
        f"{m.min_cacheable_tokens:,} tokens cached; {m.source}.",
        highlight=False,
        markup=False,
    )


def _print_strategies(plan: StrategyPlan, r: PlanReport) -> None:
    forced = not plan.model_known and any(s.native for s in plan.fitting)
    known = " (not in the model table)" if forced else ""
    table = Table(title=f"Per strategy — target {plan.target}, model {plan.model}{known}")
    table.add_column("strategy (* auto)", no_wrap=True)
    table.add_column("resident\nchars", justify="right", no_wrap=True)
    table.add_column("\ntokens", justify="right", no_wrap=True)
    table.add_column("reveal\nUSD", justify="right", no_wrap=True)
    table.add_column("appended\n+expanded", justify="right", no_wrap=True)
    table.add_column("round\ntrips", justify="right")
    for row in plan.fitting:
        name = f"{row.name}*" if row.name == plan.auto else row.name
        resident = (f"{row.resident_chars:,}", f"{row.resident_tokens_est:,}")
        if row.reveal_cost_usd is None:
            table.add_row(name, *resident, "n/a", "-", "-")
            continue
        tokens = f"{row.reveal_appended_tokens_est:,}+{row.reveal_expanded_tokens_est:,}"
        table.add_row(
            name, *resident, f"${row.reveal_cost_usd:.4f}", tokens, f"{row.reveal_round_trips}"
        )
    m = r.cache_model
    console = Console()
    console.print(table)
    unfit = [s.name for s in plan.strategies if not s.fits]
    lines = [
        f"auto picks {plan.auto}"
        + (
            " (a model name it does not know gets client; forced, a native strategy is "
            "sent as asked)"
            if forced
            else ""
        )
        + (f"; not for this target and model: {', '.join(unfit)}." if unfit else "."),
        "resident: the tools the model sees at the start of every request (Anthropic strips "
        "deferred entries; Responses shows their names and descriptions); tokens are "
        "estimates.",
        f"one reveal: input cost of {r.largest_tool or 'a deferred tool'} becoming callable, "
        f"USD at H={m.history_tokens:,} cached tokens, p=${m.price_per_mtok}/MTok: "
        f"(1 + round trips) x {m.cache_read} x p x (resident + H) + {m.cache_write} x p x "
        "(appended + expanded), in tokens est.; appended: the search call and result, a "
        "tool-change message or server search blocks; expanded: a definition the provider "
        f"expands from a reference. Rewriting the tools array "
        f"instead: ${r.cache_naive_usd:.4f}.",
    ]
    lines += [f"{s.name}: {s.note}" for s in plan.fitting if s.reveal_cost_usd is None]
    for line in lines:
        console.print(line, highlight=False, markup=False)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What the tool should do.")],
    catalog: Annotated[
        list[Path] | None, typer.Option(help="Catalog JSON file (repeatable; default: demo).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Results to return.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    repair_schemas: Annotated[bool, _REPAIR_OPTION] = False,
    ranker: Annotated[str, _RANKER_OPTION] = "bm25",
    mcp: Annotated[list[str] | None, _MCP_OPTION] = None,
    mcp_url: Annotated[list[str] | None, _MCP_URL_OPTION] = None,
) -> None:
    """Search the catalog as the model's tool_search would."""
    if not query.strip():
        _fail(UsageError("the query is empty; say what the tool should do"))
        return
    try:
        live = (list(mcp or []), list(mcp_url or []))
        loaded = _load(list(catalog or []), repair=repair_schemas, live=live)
        chef = _session(loaded, default_defer=True, defer=[], pin=[], ranker=ranker)
        view = chef.view
        hits = view.index.search([query], limit=limit)
        text = run_tool_search({"queries": [query], "limit": limit}, view.index, view.config).text
    except (ContextChefError, RecursionError) as exc:
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
        echo(_dumps(out, ensure_ascii=False))
        return
    echo(text)


@app.command("eval-retrieval")
def eval_retrieval(
    catalog: Annotated[Path, typer.Option(help="Benchmark catalog JSON (tools pool).")],
    queries: Annotated[Path, typer.Option(help="Labelled queries, JSON lines.")],
    ranker: Annotated[str, _RANKER_OPTION] = "bm25",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Score tool search on labelled queries: recall@1, recall@5, MRR, nDCG@5."""
    try:
        if ranker not in RANKERS:
            raise UsageError(f"unknown ranker {ranker!r}; valid: {', '.join(sorted(RANKERS))}")
        config = RankerConfig.of(ranker)  # a missing extra fails before the files are read
        if config.group_weight > 0:
            cat = load_benchmark_catalog(catalog)
        else:
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
    except (ContextChefError, RecursionError) as exc:
        _fail(exc)
        return
    out = {"ranker": ranker, **metrics, "queries": int(metrics["queries"])}
    if as_json:
        echo(_dumps(out, sort_keys=True))
        return
    table = Table(title=f"Tool retrieval — {catalog.name}, ranker {ranker}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("queries", "recall@1", "recall@5", "mrr", "ndcg@5"):
        table.add_row(key, str(out[key]))
    Console().print(table)


@app.command()
def diff(
    before: Annotated[Path, typer.Argument(help="The earlier request payload (JSON file).")],
    after: Annotated[Path, typer.Argument(help="The later request payload (JSON file).")],
    target: Annotated[
        str | None, typer.Option(help="The target (default: guessed from the payloads).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Say where AFTER stops extending BEFORE: the prompt cache's view of two requests.

    Exits 0 when AFTER extends BEFORE, 1 when the prefix broke (usable in CI), 2 on bad input.
    """
    from contextchef.analysis._diagnose import payload_break

    try:
        payloads = [_payload(path) for path in (before, after)]
        found = payload_break(payloads[0], payloads[1], target=target)
    except (ContextChefError, RecursionError) as exc:
        _fail(exc)
        return
    if as_json:
        out = None if found is None else dataclasses.asdict(found)
        echo(_dumps({"extends": found is None, "break": out}))
    else:
        echo(
            "AFTER extends BEFORE: the whole earlier request stays cached."
            if found is None
            else found.message
        )
    if found is not None:
        raise typer.Exit(code=1)


def _payload(path: Path) -> dict[str, Any]:
    from contextchef.analysis._transcripts import read_json_file

    data = read_json_file(path)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a request payload is a JSON object, got {type(data).__name__}")
    return data


@app.command()
def replay(
    transcripts: Annotated[
        list[Path], typer.Argument(help="Recorded conversations (transcript, payload, snapshot).")
    ],
    target: Annotated[
        str | None,
        typer.Option(
            help=f"Compile for this target (default: each recording's own). "
            f"One of: {', '.join(TARGETS)}."
        ),
    ] = None,
    strategy: Annotated[
        list[str] | None,
        typer.Option(help="flat, naive, client or native (repeatable; default: all four)."),
    ] = None,
    catalog: Annotated[
        list[Path] | None,
        typer.Option(help="Catalog JSON file whose tools join every recording's (repeatable)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model for every request (default: the recorded one).")
    ] = None,
    price: Annotated[
        float, typer.Option(min=0, help="Base input price, USD per million tokens.")
    ] = 3.0,
    cache_read: Annotated[float | None, _CACHE_READ] = None,
    cache_write: Annotated[float | None, _CACHE_WRITE] = None,
    ttl: Annotated[str | None, _TTL] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            help="Write a PNG of cumulative cost per strategy (a path ending in .png; "
            'needs the "plot" extra).'
        ),
    ] = None,
) -> None:
    """Replay recorded conversations: per request and in total, what each strategy costs."""
    from contextchef.analysis import (
        REPLAY_STRATEGIES,
        ReplayPricing,
        load_recording,
        plot_cumulative_cost,
    )
    from contextchef.analysis import replay as run_replay
    from contextchef.analysis._plot import check_plot_path

    try:
        if plot is not None:
            check_plot_path(plot)  # before the replay runs
        recordings = [load_recording(path) for path in transcripts]
        extra = [t for c in _load(list(catalog or [])) for t in c.tools] if catalog else []
        report = run_replay(
            recordings,
            target=target,
            strategies=list(strategy or REPLAY_STRATEGIES),
            extra_tools=extra,
            pricing=lambda on, named: ReplayPricing.for_model(
                on,
                named,
                price_per_mtok=price,
                cache_read=cache_read,
                cache_write=cache_write,
                ttl=ttl,
            ),
            model=model,
        )
        if plot is not None:
            plot_cumulative_cost(report, plot)
    except (ContextChefError, RecursionError) as exc:
        _fail(exc)
        return
    if as_json:
        echo(_dumps(report.to_dict(), ensure_ascii=False))
        return
    from contextchef.analysis._tables import print_replay

    print_replay(report, Console())
    if plot is not None:
        Console().print(f"plot written to {plot}", highlight=False)


def main() -> None:
    """Entry point of the ``contextchef`` script."""
    try:
        with main_guard():  # a reader that closed the pipe: the command's own exit code
            app()
    except MemoryError:  # an input too big for this machine: one line, not a traceback
        Console(stderr=True).print("error: out of memory (is an input file too large?)")
        raise SystemExit(2) from None
