"""``contextchef replay``'s text output: rich tables that fit 80 columns.

Narrow terminals and CI logs are 80 columns wide: the tables have no side borders, and a
figure wider than its column folds onto the next line instead of being cut to an
ellipsis.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from contextchef.analysis._replay import ReplayReport

__all__ = ["print_replay"]


def _table(title: str, columns: Sequence[str], left: int = 1) -> Table:
    """A table that fits 80 columns: no side borders, figures right-aligned, never cut.

    A figure wider than its column folds onto the next line instead of an ellipsis.
    """
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    for n, column in enumerate(columns):
        table.add_column(column, justify="left" if n < left else "right", overflow="fold")
    return table


def print_replay(report: ReplayReport, console: Console) -> None:
    """Print `report` as ``contextchef replay`` does.

    Per request and strategy, then the provider's usage beside the estimate, the totals,
    and the prices each recording was priced at (with their source).
    """
    columns = ("req", "strategy", "tools", "tokens", "shared B", "read", "write", "USD")
    tables: dict[str, Table] = {}
    for turn in report.turns:
        table = tables.get(turn.transcript)
        if table is None:
            table = tables[turn.transcript] = _table(f"{turn.transcript}: per request", columns, 2)
        for n, (name, f) in enumerate(turn.strategies.items()):
            table.add_row(
                str(turn.request) if n == 0 else "",
                name,
                f"{f.tools}",
                f"{f.input_tokens_est:,}",
                f"{f.shared_prefix_bytes:,}",
                f"{f.cache_read_tokens_est:,}",
                f"{f.cache_write_tokens_est + f.uncached_tokens_est:,}",
                f"${f.cost_usd:.4f}",
                end_section=n == len(turn.strategies) - 1,
            )
    for table in tables.values():
        console.print(table)
    _print_actual(console, report)
    totals = _table(
        "Replay totals per strategy",
        ("strategy", "reqs", "chars", "tokens", "read", "write", "cached", "USD"),
    )
    for name, t in report.totals.items():
        totals.add_row(
            name,
            f"{int(t['requests'])}",
            f"{int(t['input_chars']):,}",
            f"{int(t['input_tokens_est']):,}",
            f"{int(t['cache_read_tokens_est']):,}",
            f"{int(t['cache_write_tokens_est'] + t['uncached_tokens_est']):,}",
            f"{t['cached_share']:.1%}",
            f"${t['cost_usd']:.4f}",
        )
    console.print(totals)
    lines = [
        "USD = price x (read x cache read + write x cache write + uncached) / 1e6 tokens "
        "(estimates; write: tokens written, or not cached at all below the minimum "
        "length); shared B: bytes of the request in the cache's order (system, tools, "
        "conversation) that the previous request of the strategy had."
    ]
    for info in report.transcripts:
        p = info["pricing"]
        lines.append(
            f"{info['name']} ({info['target']}, {info['model']}): ${p['price_per_mtok']}/MTok, "
            f"read {p['cache_read']}x, write {p['cache_write']}x"
            + (f" ({p['ttl']})" if p["ttl"] else "")
            + f", minimum {p['min_cacheable_tokens']:,} tokens; prices: {p['source']}."
        )
        lines += [f"{info['name']}: {name} not run: {why}" for name, why in info["skipped"].items()]
    for line in lines:
        console.print(line, highlight=False, markup=False)


def _print_actual(console: Console, report: ReplayReport) -> None:
    """Per recording with usage: the estimate (first strategy run) beside the provider's."""
    tables: dict[str, Table] = {}
    for turn in report.turns:
        if turn.actual is None or not turn.strategies:
            continue
        name, f = next(iter(turn.strategies.items()))
        columns = ("req", "", "input", "read", "written", "uncached", "USD")
        title = f"{turn.transcript}: estimate ({name}) vs actual (the provider's usage)"
        table = tables.get(turn.transcript) or tables.setdefault(
            turn.transcript, _table(title, columns, 2)
        )
        a = turn.actual
        estimate = (f.input_tokens_est, f.cache_read_tokens_est, f.cache_write_tokens_est)
        rows = (
            ("estimate", *estimate, f.uncached_tokens_est, f.cost_usd),
            ("actual", a.input_tokens, a.read, a.written, a.uncached, turn.actual_cost_usd),
        )
        for label, *numbers, usd in rows:
            first = label == "estimate"
            table.add_row(
                str(turn.request) if first else "",
                str(label),
                *(f"{n:,}" for n in numbers),
                f"${usd:.4f}",
                end_section=not first,
            )
    for table in tables.values():
        console.print(table)
