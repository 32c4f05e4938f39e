"""Where the floor of a cold compile is on short messages (issue 27, item 2).

Run:  python benchmarks/cold_floor.py [--messages 1000] [--repeat 15]

On benchmarks/resume.py's short-message histories (one-line texts, a short file read per
round: one part per message), per target, CPU time (``time.process_time``), best of
``--repeat`` with a ``gc.collect()`` before each, in microseconds per message:

* ``json.dumps``: of the payload's messages as plain dicts (``payload``: of the whole
  payload, tools included: resume.py's baseline, per message too);
* ``loop``: one Python pass over the messages and their parts, a type test per part and
  nothing built (the least any per-message check costs);
* ``one dict``: that pass building one plain dict per message from its part (the least
  any renderer costs: no check, no record, no nesting);
* ``render``: the adapter's ``render_messages`` (read-only records where it makes them);
* ``as-is``: `normalize`'s one-pass check with the adapter's ``keeps``;
* ``cold``: the whole cold compile of resume.py (``set_history`` + first compile of a
  new session), per message; ``one message``: the same of a one-message history, in ms
  (what a new session's first compile costs whatever the history: its tools prefix);
  ``per further message``: (cold - one message) / (messages - 1), in us.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import resume  # benchmarks/resume.py: the same histories and sessions

from contextchef._records import plain
from contextchef.history._as_is import valid_as_is
from contextchef.history._messages import Message, TextPart, ToolCall, ToolResult
from contextchef.providers import get_adapter


def best(run: Callable[[], Any], repeat: int) -> float:
    """Best CPU time of `run` in ms, a ``gc.collect()`` before each."""
    out = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.process_time()
        run()
        out.append(time.process_time() - t0)
    return min(out) * 1000


def median_cold(target: str, size: int, repeat: int) -> float:
    """Median CPU ms of resume.py's cold compile (new session, new message objects)."""
    out = []
    for _ in range(repeat):
        worker = resume.new_session()
        made = resume.history(size, target, False) if size > 1 else [resume.user("hi")]
        assert worker.view is not None
        gc.collect()
        t0 = time.process_time()
        worker.set_history(made)
        resume.compile_for(worker, target)
        out.append(time.process_time() - t0)
    return statistics.median(out) * 1000


def loop(history: list[Message]) -> int:
    n = 0
    for message in history:
        for part in message.parts:
            if type(part) is TextPart:
                n += 1
    return n


def one_dict(history: list[Message]) -> list[dict[str, Any]]:
    out = []
    for message in history:
        part = message.parts[-1]
        if type(part) is TextPart:
            out.append({"role": message.role, "content": part.text})
        elif type(part) is ToolCall:
            out.append({"type": "function_call", "call_id": part.id, "arguments": part.arguments})
        elif type(part) is ToolResult:
            out.append({"type": "function_call_output", "call_id": part.call_id})
    return out


def row(target: str, n: int, k: int) -> str:
    """One table row: figures per message (us), cold against the payload's dumps."""
    adapter, history = get_adapter(target), resume.history(n, target, False)
    chef = resume.new_session()
    chef.set_history(history)
    payload = plain(resume.compile_for(chef, target).payload)
    entries = payload.get("messages") or payload.get("input") or payload.get("contents")
    rules, keeps = adapter.profile.history, adapter.keeps
    figures = [
        best(lambda: json.dumps(entries), k),
        best(lambda: loop(history), k),
        best(lambda: one_dict(history), k),
        best(lambda: adapter.render_messages(history), k),
        best(lambda: valid_as_is(tuple(history), rules, keeps, None), k),
    ]
    cold, whole = median_cold(target, n, k), best(lambda: json.dumps(payload), k)
    cells = " | ".join(f"{1000 * f / len(history):.2f}" for f in [*figures, cold, whole])
    fixed = median_cold(target, 1, k)
    further = 1000 * (cold - fixed) / (len(history) - 1)
    return f"| {target} | {cells} | {cold / whole:.1f}x | {fixed:.2f} | {further:.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--targets", default=",".join(resume.TARGETS))
    args = parser.parse_args()
    logging.getLogger("contextchef").setLevel(logging.ERROR)
    n, k = args.messages, args.repeat
    print(f"Command: `python benchmarks/cold_floor.py --messages {n} --repeat {k}`; us/message.\n")
    print(
        "| target | json.dumps | loop | one dict | render | as-is | cold (median) "
        "| payload json.dumps | cold / payload dumps | one message (ms) | per further message |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for target in args.targets.split(","):
        print(row(target, n, k))


if __name__ == "__main__":
    main()
