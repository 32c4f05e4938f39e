"""``contextchef replay --plot``: cumulative input cost per strategy, as a PNG.

matplotlib is the ``plot`` extra (``pip install "contextchef[plot]"``); it is imported
when a plot is drawn, never at import, and drawn with the non-interactive Agg backend.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from contextchef._errors import MissingExtraError, UsageError
from contextchef.analysis._replay import ReplayReport

__all__ = ["check_plot_path", "plot_cumulative_cost"]


def check_plot_path(path: str | Path) -> Path:
    """The plot's path, which must end in ``.png`` (the plot is always a PNG).

    Raises:
        UsageError: Another suffix (``out.svg`` would otherwise hold PNG bytes).
    """
    out = Path(path)
    if out.suffix.lower() != ".png":
        raise UsageError(f"the plot is a PNG: give a path ending in .png, got {str(out)!r}")
    return out


def plot_cumulative_cost(report: ReplayReport, path: str | Path) -> Path:
    """Write a PNG of the cumulative cost (USD) per strategy over the replayed requests.

    The x axis counts requests across every recording in order (1-based); each strategy
    that ran is one line, summed over the requests it measured.

    Returns:
        The path written.

    Raises:
        MissingExtraError: matplotlib is not installed (the ``plot`` extra).
        UsageError: The path does not end in ``.png``, the report has no request, or
            the file cannot be written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:
        raise MissingExtraError(
            'the plot needs matplotlib: pip install "contextchef[plot]" (or leave out --plot)',
            extra="plot",
            missing=["matplotlib"],
        ) from exc
    out = check_plot_path(path)
    if not report.turns:
        raise UsageError("the replay measured no request, so there is nothing to plot")
    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    try:
        for name in report.strategies:
            points = [
                (i, t.strategies[name].cost_usd)
                for i, t in enumerate(report.turns, 1)
                if name in t.strategies
            ]
            if not points:
                continue
            xs = [x for x, _ in points]
            ys = list(itertools.accumulate(c for _, c in points))
            axes.plot(xs, ys, marker=".", label=name)
        names = sorted({t.transcript for t in report.turns})
        title = names[0] if len(names) == 1 else f"{len(names)} recordings"
        axes.set_title(f"Cumulative input cost per strategy: {title}")
        axes.set_xlabel("request (replayed in order)")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # requests are counted
        axes.set_ylabel("cumulative input cost (USD)")
        axes.grid(True, alpha=0.3)
        axes.legend(title="strategy")
        figure.tight_layout()
        try:
            figure.savefig(out, format="png")
        except OSError as exc:
            raise UsageError(f"cannot write {str(out)!r}: {exc.strerror}") from exc
    finally:
        plt.close(figure)
    return out
