"""One gate for every tool call (dispatch layer).

`check_tool_call` resolves the call to the real tool — through ``defer_execute`` when the
model used the wrapper — and applies, in order: known tool? reachable this way (a
deferred tool must go through ``defer_execute``)? arguments a JSON object? arguments valid
against the tool's schema? The result is `Allowed` (with the real tool and the arguments
to run it with) or `Denied` (with a model-readable reason). `execute` / `aexecute` run the
check, then ``tool_search`` or a registered Python handler, and always return a
`ToolResult` paired with the call's id: bad calls become error results, never exceptions
that stop the agent loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from contextchef._deferred import DEFER_EXECUTE, TOOL_SEARCH, run_tool_search
from contextchef._errors import MalformedArgumentsError, UsageError
from contextchef._json import JsonValue, canonical_dumps
from contextchef._messages import ToolCall, ToolResult
from contextchef._schema import strip_strict_nulls, validation_errors
from contextchef._tool import Tool
from contextchef._view import SessionView

__all__ = [
    "Allowed",
    "CheckResult",
    "Denied",
    "Execution",
    "aexecute",
    "check_tool_call",
    "execute",
]


@dataclass(frozen=True, kw_only=True)
class Allowed:
    """The call may run.

    Attributes:
        tool: The real tool (the target of ``defer_execute``, or a meta-tool itself).
        wire_name: The tool's wire name.
        arguments: Validated arguments to run it with (strict-mode nulls removed).
        via: ``"defer_execute"`` when the call came through the wrapper, else None.
    """

    tool: Tool
    wire_name: str
    arguments: Mapping[str, JsonValue]
    via: str | None = None
    decision: Literal["allowed"] = "allowed"


@dataclass(frozen=True, kw_only=True)
class Denied:
    """The call must not run.

    Attributes:
        reason: Model-readable explanation, sent back as an error tool result.
        tool: The resolved tool, when the name was known.
        code: Machine-readable kind: ``unknown_tool``, ``not_loaded`` (deferred tool
            called directly), ``malformed_arguments``, ``invalid_arguments``.
    """

    reason: str
    code: str
    tool: Tool | None = None
    decision: Literal["denied"] = "denied"


CheckResult = Allowed | Denied


def _unknown(view: SessionView, name: str) -> Denied:
    hint = (
        "If it is a deferred tool, find its exact name with tool_search."
        if view.meta_tools
        else "Use one of the tools you were given."
    )
    return Denied(reason=f'Unknown tool "{name}". {hint}', code="unknown_tool")


def _invalid(tool: Tool, wire: str, problems: list[str]) -> Denied:
    lines = "\n".join(f"- {p}" for p in problems)
    return Denied(
        reason=(
            f'Invalid arguments for tool "{wire}":\n{lines}\n'
            f"Expected input schema:\n{canonical_dumps(tool.input_schema)}"
        ),
        code="invalid_arguments",
        tool=tool,
    )


def _validated(tool: Tool, wire: str, arguments: object, via: str | None) -> CheckResult:
    if not isinstance(arguments, Mapping):
        return Denied(
            reason=f'Arguments for tool "{wire}" must be a JSON object.',
            code="malformed_arguments",
            tool=tool,
        )
    args = strip_strict_nulls(arguments, tool.input_schema) if tool.strict else dict(arguments)
    problems = validation_errors(tool.input_schema, args)
    if problems:
        return _invalid(tool, wire, problems)
    return Allowed(tool=tool, wire_name=wire, arguments=args, via=via)


def check_tool_call(view: SessionView, call: ToolCall) -> CheckResult:
    """Decide whether a model's tool call may run, keyed on the real tool.

    Args:
        view: The session's frozen tool view.
        call: The call as the model made it.

    Returns:
        `Allowed` or `Denied`; never raises for bad model output.
    """
    try:
        arguments = call.parsed_arguments()
    except MalformedArgumentsError as exc:
        tool = view.meta_tools.get(call.name) or view.lookup(call.name)
        if tool is None:
            return _unknown(view, call.name)
        return Denied(
            reason=f"{exc} Resend the call with the arguments as one JSON object.",
            code="malformed_arguments",
            tool=tool,
        )
    meta = view.meta_tools.get(call.name)
    if meta is not None and call.name == TOOL_SEARCH:
        return Allowed(tool=meta, wire_name=TOOL_SEARCH, arguments=arguments)
    if meta is not None and call.name == DEFER_EXECUTE:
        problems = validation_errors(meta.input_schema, arguments)
        if problems:
            return _invalid(meta, DEFER_EXECUTE, problems)
        target_name = str(arguments["tool_name"])
        target = view.lookup(target_name)
        if target is None:
            return _unknown(view, target_name)
        wire = view.wire_names[target.key]
        return _validated(target, wire, arguments["params"], DEFER_EXECUTE)
    tool = view.lookup(call.name)
    if tool is None:
        return _unknown(view, call.name)
    wire = view.wire_names[tool.key]
    if view.exposure.get(tool.key) == "deferred":
        return Denied(
            reason=(
                f'Tool "{wire}" is deferred and cannot be called directly. Load its schema '
                f'with tool_search({{"tool_names": ["{wire}"]}}), then call it with '
                f'defer_execute({{"tool_name": "{wire}", "params": {{...}}}}).'
            ),
            code="not_loaded",
            tool=tool,
        )
    return _validated(tool, wire, arguments, None)


@dataclass(frozen=True, kw_only=True)
class Execution:
    """What running one call produced.

    Attributes:
        result: The tool result to append to history (same id as the call).
        check: The gate's decision.
        loaded: Wire names whose schemas a ``tool_search`` call just showed the model.
    """

    result: ToolResult
    check: CheckResult
    loaded: tuple[str, ...] = ()


HandlerLookup = Callable[[Tool], Callable[..., Any] | None]


def _render_output(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return canonical_dumps(value)
    except (TypeError, ValueError):
        return str(value)


def _prepare(
    view: SessionView, call: ToolCall, handlers: HandlerLookup
) -> tuple[CheckResult, Execution | None, Callable[..., Any] | None]:
    check = check_tool_call(view, call)
    if isinstance(check, Denied):
        result = ToolResult(call_id=call.id, name=call.name, content=check.reason, is_error=True)
        return check, Execution(result=result, check=check), None
    if check.tool.name == TOOL_SEARCH and check.via is None and view.meta_tools:
        outcome = run_tool_search(check.arguments, view.index, view.config)
        result = ToolResult(
            call_id=call.id, name=call.name, content=outcome.text, is_error=outcome.is_error
        )
        return check, Execution(result=result, check=check, loaded=outcome.loaded), None
    handler = handlers(check.tool)
    if handler is None:
        raise UsageError(
            f'no Python handler is registered for tool "{check.wire_name}" '
            f"(origin {check.tool.origin!r}); register one with handlers=..., or run the "
            "tool yourself after check_tool_call() allowed it"
        )
    return check, None, handler


def _finish(
    call: ToolCall, check: CheckResult, value: Any = None, error: BaseException | None = None
) -> Execution:
    if error is not None:
        content = f"Tool raised {type(error).__name__}: {error}"
        return Execution(
            result=ToolResult(call_id=call.id, name=call.name, content=content, is_error=True),
            check=check,
        )
    return Execution(
        result=ToolResult(call_id=call.id, name=call.name, content=_render_output(value)),
        check=check,
    )


def execute(view: SessionView, call: ToolCall, handlers: HandlerLookup) -> Execution:
    """Check a call and, if allowed, run it (``tool_search`` or a registered handler).

    Coroutine handlers are run with `asyncio.run` when no event loop is running; inside
    a loop use `aexecute`. Exceptions raised by a handler become error results.

    Raises:
        UsageError: The call is allowed but no handler is registered for its tool, or an
            async handler is called from inside a running event loop.
    """
    check, done, handler = _prepare(view, call, handlers)
    if done is not None or handler is None:
        assert done is not None
        return done
    assert isinstance(check, Allowed)
    if inspect.iscoroutinefunction(handler):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise UsageError(
                f'the handler of "{check.wire_name}" is async and an event loop is running; '
                "use aexecute()"
            )
        try:
            return _finish(call, check, asyncio.run(handler(**check.arguments)))
        except Exception as exc:
            return _finish(call, check, error=exc)
    try:
        return _finish(call, check, handler(**check.arguments))
    except Exception as exc:
        return _finish(call, check, error=exc)


async def aexecute(view: SessionView, call: ToolCall, handlers: HandlerLookup) -> Execution:
    """Async `execute`: awaits coroutine handlers, calls sync ones directly.

    Raises:
        UsageError: The call is allowed but no handler is registered for its tool.
    """
    check, done, handler = _prepare(view, call, handlers)
    if done is not None or handler is None:
        assert done is not None
        return done
    assert isinstance(check, Allowed)
    try:
        value = handler(**check.arguments)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        return _finish(call, check, error=exc)
    return _finish(call, check, value)
