"""A cold compile on short messages, step by step (issue 27, item 2).

Run:  python benchmarks/cold_steps.py [--messages 1000] [--repeat 9] [--targets anthropic,...]

On benchmarks/resume.py's short-message histories, the cold compile of resume.py (a new
session, ``set_history`` of message objects no session has seen, the first compile), with
the CPU time (``time.process_time``) of each step summed over the compile: the steps are
wrapped where the session calls them (one wrapper call per compile, none per message).
Figures in microseconds per message, median of ``--repeat`` compiles, a ``gc.collect()``
before each:

* ``set_history``: its check of the messages (`history._forms.checked_history`);
* ``as-is``: `normalize`'s one-pass check (`history._as_is.valid_as_is`), and
  ``normalize, rest``: the rest of `normalize` (nothing else on a valid history);
* ``fit``: the target's `fit_references`; ``revealed``: the tool changes step, mostly
  the target's `revealed_tools`;
* ``render``: the target's `render_messages`;
* ``record etc.``: the rest of the compile's steps 2-7 (recording the new entries, cache
  marks, the update, the mark); ``assemble``: the payload around the entries (the
  compaction scan of the entries, Anthropic's tool-turn thinking check);
* ``ledger``: `Ledger.apply` (the entries appended, the calls indexed);
* ``per session``: the rest: the compile's fixed part (the session's prefix, its tools
  copied, the pattern checks), about what a one-message cold compile costs.
"""

from __future__ import annotations

import argparse
import collections
import gc
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import resume  # benchmarks/resume.py: the same histories and sessions

import contextchef.history._forms as forms
import contextchef.history._normalize as normalizing
import contextchef.session._compile as compiling
import contextchef.session._compile_parts as parts
import contextchef.session._ledger as ledgers

SPENT: dict[str, float] = collections.defaultdict(float)


def timed(owner: Any, name: str, label: str) -> None:
    """Replace `owner.name` by a wrapper adding its CPU time to ``SPENT[label]``."""
    run: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.process_time()
        try:
            return run(*args, **kwargs)
        finally:
            SPENT[label] += time.process_time() - t0

    setattr(owner, name, wrapper)


timed(forms, "checked_history", "set_history")
timed(normalizing, "_valid_as_is", "as-is")
timed(parts, "normalize", "normalize")
timed(compiling, "_fit", "fit")
timed(compiling, "_tool_changes", "revealed")
timed(compiling, "render_checked", "render")
timed(compiling, "_assemble", "assemble")
timed(compiling, "_make", "make")
timed(ledgers.Ledger, "apply", "ledger")


def steps(target: str, size: int, repeat: int) -> dict[str, float]:
    """Median us per message of each step over `repeat` cold compiles."""
    spent: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(repeat):
        worker = resume.new_session()
        assert worker.view is not None  # the tool view is the catalog's cost
        made = resume.history(size, target, False)
        SPENT.clear()
        gc.collect()
        t0 = time.process_time()
        worker.set_history(made)
        resume.compile_for(worker, target)
        spent["total"].append(time.process_time() - t0)
        for label, seconds in SPENT.items():
            spent[label].append(seconds)
    m = {k: 1e6 * statistics.median(v) / size for k, v in spent.items()}
    inner = ("normalize", "fit", "revealed", "render", "assemble")
    return {
        "set_history": m["set_history"],
        "as-is": m["as-is"],
        "normalize, rest": m["normalize"] - m["as-is"],
        "fit": m["fit"],
        "revealed": m["revealed"],
        "render": m["render"],
        "record etc.": m["make"] - sum(m[k] for k in inner),
        "assemble": m["assemble"],
        "ledger": m["ledger"],
        "per session": m["total"] - m["make"] - m["set_history"] - m["ledger"],
        "total": m["total"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--targets", default=",".join(resume.TARGETS))
    args = parser.parse_args()
    logging.getLogger("contextchef").setLevel(logging.ERROR)
    targets = args.targets.split(",")
    rows = {t: steps(t, args.messages, args.repeat) for t in targets}
    print(
        f"Command: `python benchmarks/cold_steps.py --messages {args.messages} "
        f"--repeat {args.repeat}`; us/message, median.\n"
    )
    print("| step | " + " | ".join(targets) + " |")
    print("|---|" + "---:|" * len(targets))
    for label in rows[targets[0]]:
        print(f"| {label} | " + " | ".join(f"{rows[t][label]:.2f}" for t in targets) + " |")


if __name__ == "__main__":
    main()
