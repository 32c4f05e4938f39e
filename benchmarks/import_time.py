"""Start-up cost: ``import contextchef`` and friends against ``import json``.

Run:  python benchmarks/import_time.py [--runs 15]

Each case runs in a fresh interpreter, ``--runs`` times, interleaved with the baseline so
machine load hits both alike; the median is reported. Bytecode caches are warm (written
once to a temporary ``PYTHONPYCACHEPREFIX``, as an installed package has its ``.pyc``
files), so the figures are import work, not compilation. Two measures per case:

* **import**: ``time.perf_counter`` around the import statement inside the process;
* **process**: wall time of the whole ``python -c ...`` (interpreter start included).

Baseline (same run): ``import json``. Targets: ``import contextchef`` <= 5x (issue 14);
``from contextchef import ContextChef`` <= 3x as a process (issue 27).
``first compile`` is what a process that serves a request pays before its first payload:
the import, one default session and one Anthropic compile of one user turn (the session's
machinery loads with the first ``ContextChef()``, not with the import).
``--before SRC`` adds ``import contextchef``, ``from contextchef import ContextChef`` and
the first compile from another source tree (e.g. the commit
before this issue, unpacked with ``git archive <commit> src | tar -x -C /tmp/before``,
then ``--before /tmp/before/src``), measured in the same run.
``all names + heavy deps`` reads every public name and imports the heavy dependencies,
which approximates what ``import contextchef`` cost before names and dependencies were
loaded lazily.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

CASES: dict[str, str] = {
    "import json (baseline)": "import json",
    "import contextchef": "import contextchef",
    "from contextchef import ContextChef": "from contextchef import ContextChef",
    "first compile (import, ContextChef(), one user turn, anthropic)": (
        "from contextchef import ContextChef, user; chef = ContextChef(); "
        "chef.set_history([user('hi')]); chef.compile('anthropic')"
    ),
    "from contextchef import * (every name)": "from contextchef import *",
    "all names + heavy deps (before: eager)": (
        "from contextchef import *; import numpy, bm25s, jsonschema, jsonschema_rs, "
        "jinja2.sandbox, pydantic, docstring_parser"
    ),
}

PROBE = "import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"


BEFORE = "import contextchef (--before tree)"
BEFORE_CHEF = "from contextchef import ContextChef (--before tree)"
BEFORE_FIRST = "first compile (--before tree)"


def _run(code: str, env: dict[str, str]) -> tuple[float, float]:
    """(import seconds inside the process, process wall seconds)."""
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(code=code)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    wall = time.perf_counter() - start
    return float(out.strip().splitlines()[-1]), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", default="", help="another src/ tree to measure")
    args = parser.parse_args()
    runs = args.runs
    cases = dict(CASES)
    if args.before:
        cases[BEFORE] = "import contextchef"
        cases[BEFORE_CHEF] = "from contextchef import ContextChef"
        cases[BEFORE_FIRST] = cases[
            "first compile (import, ContextChef(), one user turn, anthropic)"
        ]
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        before_env = {**env, "PYTHONPATH": args.before}
        for name, code in cases.items():  # warm the bytecode cache
            _run(code, before_env if name in (BEFORE, BEFORE_CHEF, BEFORE_FIRST) else env)
        inside: dict[str, list[float]] = {name: [] for name in cases}
        wall: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, code in cases.items():
                a, b = _run(
                    code, before_env if name in (BEFORE, BEFORE_CHEF, BEFORE_FIRST) else env
                )
                inside[name].append(a)
                wall[name].append(b)
    base_in = statistics.median(inside["import json (baseline)"])
    base_wall = statistics.median(wall["import json (baseline)"])
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"median of {runs} fresh interpreters per case, interleaved\n")
    print("| case | import ms | x import json | process ms | x process json |")
    print("|---|---:|---:|---:|---:|")
    for name in cases:
        a, b = statistics.median(inside[name]), statistics.median(wall[name])
        print(
            f"| {name} | {a * 1000:.1f} | {a / base_in:.1f}x | {b * 1000:.1f} | "
            f"{b / base_wall:.1f}x |"
        )


if __name__ == "__main__":
    main()
