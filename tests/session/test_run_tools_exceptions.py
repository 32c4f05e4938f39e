"""Whatever a handler, fallback or hook raises becomes a result naming the tool.

Regression (breakit1 s19/s18): a sync handler raising StopIteration made `arun_tools`
hang forever (asyncio cannot put StopIteration into the worker thread's Future), and
GeneratorExit or a CancelledError raised by sync code escaped `run_tools` and
`arun_tools` with the other results of the batch lost. Only KeyboardInterrupt,
SystemExit and the cancellation of an awaited task still propagate.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contextchef import Allowed, ContextChef, ToolCall, ToolResult, assistant, user

ODD = [StopIteration("none left"), GeneratorExit("closed"), asyncio.CancelledError("mine")]


def ok(s: str) -> str:
    """Answer ok.

    Args:
        s: any text
    """
    return f"ok {s}"


def _chef(exc: BaseException) -> tuple[ContextChef, list[ToolCall]]:
    def bad(s: str) -> str:
        """Raise.

        Args:
            s: any text
        """
        raise exc

    chef = ContextChef()
    chef.register_tools([ok, bad])
    chef.set_history([user("go")])
    calls = [
        ToolCall(id="1", name="ok", arguments={"s": "a"}),
        ToolCall(id="2", name="bad", arguments={"s": "a"}),
        ToolCall(id="3", name="ok", arguments={"s": "b"}),
    ]
    chef.append(assistant("", calls))
    return chef, calls


def _within(coro: Any) -> Any:
    async def main() -> Any:
        return await asyncio.wait_for(coro, 60)  # a hang fails the test instead of the run

    return asyncio.run(main())


@pytest.mark.parametrize("exc", ODD, ids=lambda e: type(e).__name__)
def test_sync_handler_odd_exceptions_become_error_results_in_every_entry_point(
    exc: BaseException,
) -> None:
    name = type(exc).__name__
    expected = f'Tool "bad" raised {name}: {exc}'
    chef, calls = _chef(exc)
    for results in (
        chef.run_tools(calls, append=False),
        _within(chef.arun_tools(calls, append=False)),
    ):
        assert [r.content for r in results] == ["ok a", expected, "ok b"]
        assert [r.is_error for r in results] == [False, True, False]
    assert chef.execute(calls[1]).result.content == expected
    assert _within(chef.aexecute(calls[1])).result.content == expected


def test_a_sync_fallback_raising_stopiteration_in_a_worker_thread_is_answered() -> None:
    chef = ContextChef()
    chef.register_mcp_tools(
        {"tools": [{"name": "f", "inputSchema": {"type": "object"}}]}, server="web"
    )

    def fallback(call: ToolCall, allowed: Allowed) -> str:
        raise StopIteration("empty")

    call = ToolCall(id="f1", name="web__f", arguments={})
    (result,) = _within(chef.arun_tools([call], fallback=fallback, append=False))
    assert (result.content, result.is_error) == ('Tool "web__f" raised StopIteration: empty', True)


def test_hooks_raising_stopiteration_or_generatorexit_deny_or_annotate() -> None:
    chef, calls = _chef(StopIteration())

    def before(event: Any) -> None:
        if event.call.id == "3":
            raise StopIteration("policy empty")

    def after(event: Any, result: ToolResult) -> None:
        raise GeneratorExit("gone")

    chef.before_tool_call(before)
    chef.after_tool_call(after)
    for results in (chef.run_tools(calls, append=False), _within(chef.arun_tools(calls))):
        first, _, third = results
        assert first.content == "ok a\n[post-processing after failed: gone]"
        assert third.is_error
        assert third.content == (
            'The call to "ok" was not run: a policy check failed (StopIteration: policy empty).'
        )
