"""One session shared by several threads (issue 23, item 3): nothing lost, nothing raw.

`ContextChef` runs every method under one re-entrant lock (`contextchef._locking`).
Threads hammer one session with compile / ingest + run_tools / append / snapshot; each
thread counts what returned normally, and afterwards all of it must be in the history, in
each thread's own order, every tool result after the turn that asked for it. Without the
lock the same run lost about a fifth of the appends and ingests and raised bare
``IndexError`` from the snapshot (checked when the lock was written).

Sizes: the default run does 480 operations; ``CONTEXTCHEF_FULL_TESTS=1`` does 10,400
(the figures are in the report of the branch that added this file).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

from conftest import FULL_TESTS
from contextchef import ContextChef, ContextChefError, Message, user

ROUNDS = 52 if FULL_TESTS else 3
PER_THREAD = 25 if FULL_TESTS else 20
KINDS = ("append", "turn", "compile", "snapshot")
THREADS_PER_KIND = 2

ECHO = {
    "name": "echo",
    "description": "Echo the text.",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def _reply(tag: str) -> dict[str, Any]:
    """An Anthropic response: a text naming `tag` and one ``echo`` call with id ``t_<tag>``."""
    return {
        "id": f"msg_{tag}",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": tag},
            {"type": "tool_use", "id": f"t_{tag}", "name": "echo", "input": {"text": tag}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _session() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([ECHO], handlers={"echo": lambda text="": f"echo {text}"})
    chef.set_history([user("start")])
    return chef


def _texts(message: Message) -> list[str]:
    return [getattr(p, "text", "") for p in message.parts]


def _round(chef: ContextChef, number: int, failures: Counter[str]) -> int:
    """One round of every thread; returns how many operations returned normally."""
    done: dict[str, list[str]] = {}

    def work(name: str) -> None:
        kind, mine = name.split("-")[0], done.setdefault(name, [])
        for i in range(PER_THREAD):
            tag = f"{name}-{number}-{i}"
            try:
                if kind == "append":
                    chef.append(user(tag))
                elif kind == "turn":
                    calls = chef.ingest(_reply(tag))
                    assert [c.id for c in calls] == [f"t_{tag}"]
                    (result,) = chef.run_tools(calls)
                    assert result.content == f"echo {tag}"
                elif kind == "compile":
                    chef.compile("anthropic")
                else:
                    chef.snapshot()
                mine.append(tag)
            except ContextChefError as exc:  # a clean refusal: still a failure here
                failures[f"{kind}: {type(exc).__name__}: {exc}"[:200]] += 1
            except Exception as exc:  # a raw exception escaped the session
                failures[f"RAW {kind}: {type(exc).__name__}: {exc}"[:200]] += 1

    names = [f"{k}-{t}" for k in KINDS for t in range(THREADS_PER_KIND)]
    threads = [threading.Thread(target=work, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    history = chef.history
    position: dict[str, int] = {}
    for index, message in enumerate(history):
        for text in _texts(message):
            position.setdefault(text, index)
        for result in message.tool_results:
            position.setdefault(f"result {result.call_id}", index)
    for name, tags in done.items():
        if name.startswith("append"):
            at = [position.get(tag, -1) for tag in tags]
            assert -1 not in at, f"{name}: appends lost: {at.count(-1)}"
            assert at == sorted(at), f"{name}: appends out of order"
        if name.startswith("turn"):
            for tag in tags:
                asked, answered = position.get(tag, -1), position.get(f"result t_{tag}", -1)
                assert asked >= 0, f"{tag}: ingested turn lost"
                assert answered > asked, f"{tag}: its result lost or before its call"
                (call,) = history[asked].tool_calls
                assert (call.id, call.name, call.arguments) == (
                    f"t_{tag}",
                    "echo",
                    f'{{"text":"{tag}"}}',
                )
    chef.set_history([user("start")])  # keep each round's compiles small
    return sum(map(len, done.values()))


def test_threads_sharing_one_session_lose_nothing_and_raise_nothing_raw() -> None:
    chef, failures, total = _session(), Counter[str](), 0
    for number in range(ROUNDS):
        total += _round(chef, number, failures)
    assert not failures, failures.most_common(5)
    assert total == ROUNDS * PER_THREAD * len(KINDS) * THREADS_PER_KIND


def test_a_tool_function_may_call_the_session_back_from_its_own_thread() -> None:
    chef, seen = _session(), []

    def look(text: str = "") -> str:
        seen.append(len(chef.history))  # same thread, lock held: re-entered
        return text

    chef.register_tools([{**ECHO, "name": "look"}], handlers={"look": look})
    (result,) = chef.run_tools([{"id": "c1", "name": "look", "arguments": {"text": "x"}}])
    assert result.content == "x" and seen == [1] and len(chef.history) == 2


def test_arun_tools_releases_the_lock_while_sync_tools_run_in_worker_threads() -> None:
    """A sync tool `arun_tools` runs with `asyncio.to_thread` calls the session back from
    that worker thread; were the lock held across the ``await``, this would never end."""
    chef, seen = _session(), []

    def look(text: str = "") -> str:
        assert threading.current_thread() is not threading.main_thread()
        chef.append(user(f"from the tool {text}"))
        seen.append(len(chef.history))
        return text

    chef.register_tools([{**ECHO, "name": "look"}], handlers={"look": look})
    calls = [{"id": f"c{i}", "name": "look", "arguments": {"text": str(i)}} for i in range(3)]

    async def main() -> tuple[Any, ...]:
        return await asyncio.wait_for(chef.arun_tools(calls), timeout=30)

    results = asyncio.run(main())
    assert [r.content for r in results] == ["0", "1", "2"] and sorted(seen) == [2, 3, 4]
    assert len(chef.history) == 5 and chef.history[-1].tool_results[0].call_id == "c0"
