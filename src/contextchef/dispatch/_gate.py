"""One gate for every tool call (dispatch layer).

`check_tool_call` resolves the call to the real tool — through ``defer_execute`` or a
namespace tool (``{"action": <sub-tool>, "args": {...}}``) when the model used a
wrapper — and applies, in order:

1. arguments are a JSON object;
2. the tool is known;
3. it is exposed in the session's mode;
4. it is reachable this way (a namespace sub-tool only through its namespace; a deferred
   tool through ``defer_execute``, or directly when the strategy sends deferred tools'
   definitions (``flat``, provider-native search); with ``require_search``, only after its
   schema was loaded, by ``tool_search`` or by the provider's own search);
5. it is not blocked;
6. its arguments are valid against its schema;
7. before-hooks allow it (they see the real tool's name and arguments and may deny).

The result is `Allowed` (the real tool and the arguments to run it with) or `Denied` (a
model-readable reason and a machine-readable code). `execute` / `aexecute` run the check,
then ``tool_search`` or a registered Python handler, then after-hooks (which may rewrite
the result, e.g. add guidance that only makes sense once the tool has run);
``load_toolkit`` returns the toolkit's schemas and reports the load in
`Execution.toolkit` for the session to record. Bad calls
always come back as error `ToolResult` values paired with the call's id, never as
exceptions that stop the agent loop.

Library-owned tools (memory, ``new_context``) are registry tools like any other: the same
steps apply to them. Calls arrive in any `CallLike` shape and are normalized once by the
caller (`contextchef.dispatch._calls`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from contextchef._errors import UsageError
from contextchef._json import JsonValue, canonical_dumps, freeze
from contextchef.deferred._groups import NamespaceView, render_toolkit_load
from contextchef.deferred._meta import DEFER_EXECUTE, TOOL_SEARCH, run_tool_search
from contextchef.deferred._view import SessionView
from contextchef.dispatch._calls import parse_arguments, parse_object
from contextchef.exposure._policy import matches
from contextchef.history._messages import ToolCall, ToolResult
from contextchef.tools._names import wire_name
from contextchef.tools._schema import strip_strict_nulls, validation_errors
from contextchef.tools._tool import Tool

__all__ = [
    "ActionProblem",
    "AfterHook",
    "Allowed",
    "BeforeHook",
    "CheckResult",
    "Denied",
    "Execution",
    "GateContext",
    "ToolCallEvent",
    "acheck_tool_call",
    "aexecute",
    "arun_after_hooks",
    "arun_before_hooks",
    "check_tool_call",
    "execute",
    "run_after_hooks",
    "run_before_hooks",
]


@dataclass(frozen=True, kw_only=True)
class Allowed:
    """The call may run.

    Attributes:
        tool: The real tool (the target of ``defer_execute``, or a meta-tool itself).
        wire_name: The tool's wire name.
        arguments: Validated arguments to run it with (strict-mode nulls removed).
        via: ``"defer_execute"`` or ``"namespace:<namespace>"`` when the call came
            through a wrapper, else None.
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
        code: Machine-readable kind: ``malformed_arguments``, ``unknown_tool``,
            ``not_in_mode``, ``not_loaded`` (deferred tool called directly, or before
            its schema was loaded under ``require_search``), ``namespace`` (a
            namespace sub-tool called other than through its namespace), ``blocked``,
            ``invalid_arguments``, ``hook``.
        tool: The resolved tool, when the name was known.
    """

    reason: str
    code: str
    tool: Tool | None = None
    decision: Literal["denied"] = "denied"


CheckResult = Allowed | Denied


@dataclass(frozen=True, kw_only=True)
class ToolCallEvent:
    """What hooks see: the real tool, never the ``defer_execute`` wrapper.

    Attributes:
        call: The call as the model made it.
        tool: The real tool.
        wire_name: Its wire name.
        arguments: The validated arguments.
        via: ``"defer_execute"`` or ``"namespace:<namespace>"`` when called through a
            wrapper.
    """

    call: ToolCall
    tool: Tool
    wire_name: str
    arguments: Mapping[str, JsonValue]
    via: str | None = None


BeforeHook = Callable[[ToolCallEvent], "str | bool | Awaitable[str | bool | None] | None"]
"""Called before a call runs; return None (or False) to allow it, a reason string to deny
it. A hook that raises denies the call (fails closed) with the error in the reason."""

AfterHook = Callable[
    [ToolCallEvent, ToolResult], "ToolResult | Awaitable[ToolResult | None] | None"
]
"""Called after a call ran; return None to keep the result or a `ToolResult` with the same
call_id to replace it. A hook that raises leaves the result with a note appended."""


@dataclass(frozen=True, kw_only=True)
class GateContext:
    """Session state the gate reads (none of it reaches the cached prefix).

    Attributes:
        blocked: Patterns of tools that are currently blocked.
        loaded: Wire names whose schemas the model has loaded with ``tool_search``.
        before: Hooks run after validation, in order; the first denial wins.
        after: Hooks run on each result, in order.
        direct_calls: The strategy sends deferred tools' definitions (``flat``, or a
            provider's own tool search), so the model calls them directly by name.
        all_loaded: Every schema is in the payload (``flat``): ``require_search`` is met.
    """

    blocked: tuple[str, ...] = ()
    loaded: frozenset[str] = frozenset()
    before: tuple[BeforeHook, ...] = ()
    after: tuple[AfterHook, ...] = field(default_factory=tuple)
    direct_calls: bool = False
    all_loaded: bool = False


def _unknown(view: SessionView, name: str) -> Denied:
    hint = (
        "If it is a deferred tool, find its exact name with tool_search."
        if view.meta_tools
        else "Use one of the tools you were given."
    )
    return Denied(reason=f'Unknown tool "{name}". {hint}', code="unknown_tool")


def _invalid(tool: Tool, wire: str, problems: list[str]) -> Denied:
    """A denial for invalid arguments, echoing the expected schema.

    Library-owned tools' small static schemas are in every payload that offers them, so
    theirs is not echoed.
    """
    lines = "\n".join(f"- {p}" for p in problems)
    schema = ""
    if tool.source != "library":
        schema = f"\nExpected input schema:\n{canonical_dumps(tool.input_schema)}"
    return Denied(
        reason=f'Invalid arguments for tool "{wire}":\n{lines}{schema}',
        code="invalid_arguments",
        tool=tool,
    )


Resolved = tuple[Tool, Any, str | None] | Denied
"""The real tool, its raw arguments and the wrapper used (None: called directly), or a
denial."""


def _resolve(view: SessionView, call: ToolCall) -> Resolved:
    """The real tool, its raw arguments and the wrapper used, or a denial."""
    arguments = parse_arguments(call)
    if isinstance(arguments, str):
        tool = view.wrapper(call.name) or view.lookup(call.name)
        if tool is None:
            return _unknown(view, call.name)
        return Denied(reason=arguments, code="malformed_arguments", tool=tool)
    meta = view.meta_tools.get(call.name)
    if meta is not None and call.name == DEFER_EXECUTE:
        problems = validation_errors(meta.input_schema, arguments)
        if problems:
            return _invalid(meta, DEFER_EXECUTE, problems)
        if arguments["tool_name"] in view.meta_tools:
            return Denied(
                reason=(
                    f"defer_execute runs deferred tools; call {arguments['tool_name']} "
                    "directly instead."
                ),
                code="invalid_arguments",
                tool=meta,
            )
        target = view.lookup(str(arguments["tool_name"]))
        if target is None:
            return _unknown(view, str(arguments["tool_name"]))
        return target, arguments["params"], DEFER_EXECUTE
    if meta is not None:
        return meta, arguments, None
    if call.name in view.namespaces:
        return _resolve_action(view.namespaces[call.name], arguments)
    if view.toolkit_loader is not None and call.name == view.toolkit_loader.name:
        return _resolve_loader(view, view.toolkit_loader, arguments)
    tool = view.lookup(call.name)
    if tool is None:
        return _unknown(view, call.name)
    return tool, arguments, None


@dataclass(frozen=True, kw_only=True)
class ActionProblem:
    """Why a namespace call does not name a usable action.

    Attributes:
        code: ``invalid_arguments`` (the call's shape is wrong) or ``unknown_tool`` (no
            such action).
        problems: One line per problem (``invalid_arguments``).
        message: The model-readable sentence (``unknown_tool``).
    """

    code: str
    problems: tuple[str, ...] = ()
    message: str = ""


_NS_KEYS = ("action", "args")


def resolve_action(
    ns: NamespaceView, arguments: Mapping[str, Any]
) -> tuple[Tool, dict[str, JsonValue]] | ActionProblem:
    """A namespace call's arguments -> (the sub-tool, its arguments), or the problem.

    ``args`` may be omitted for an action without required arguments (``{}``), and may
    be JSON text holding the object (models often nest arguments that way).
    """
    action = arguments.get("action")
    problems = [f"unexpected property {k!r}" for k in sorted(arguments) if k not in _NS_KEYS]
    if not isinstance(action, str):
        problems.insert(0, "'action' is required and must be a string")
    args = parse_object(arguments.get("args", {}))
    if isinstance(args, str):
        problems.append(f"'args' must be an object ({args})")
    if problems or not isinstance(action, str) or isinstance(args, str):
        return ActionProblem(code="invalid_arguments", problems=tuple(problems))
    member = ns.members.get(action)
    if member is None:
        return ActionProblem(
            code="unknown_tool",
            message=(
                f'Unknown action "{action}" for "{ns.name}". Available actions: '
                f"{', '.join(ns.actions)}."
            ),
        )
    return member, args


def _resolve_action(ns: NamespaceView, arguments: Mapping[str, Any]) -> Resolved:
    """A namespace call -> (sub-tool, its arguments, ``namespace:<name>``), or a denial."""
    resolved = resolve_action(ns, arguments)
    if isinstance(resolved, ActionProblem):
        if resolved.code == "invalid_arguments":
            return _invalid(ns.tool, ns.name, list(resolved.problems))
        return Denied(reason=resolved.message, code=resolved.code, tool=ns.tool)
    member, args = resolved
    return member, args, f"namespace:{ns.name}"


def _resolve_loader(view: SessionView, loader: Tool, arguments: Mapping[str, Any]) -> Resolved:
    """A ``load_toolkit`` call -> (the loader, its arguments, None), or a denial."""
    problems = validation_errors(loader.input_schema, arguments)
    if problems:
        return _invalid(loader, loader.name, problems)
    name = str(arguments["toolkit_name"])
    if name not in view.toolkits:
        return Denied(
            reason=(
                f'Unknown toolkit "{name}". Available toolkits: {", ".join(sorted(view.toolkits))}.'
            ),
            code="unknown_tool",
            tool=loader,
        )
    return loader, arguments, None


def _route(view: SessionView, ctx: GateContext, tool: Tool, via: str | None) -> Denied | None:
    """Is `tool` reachable the way it was called (namespace, deferred, require_search)?"""
    wire = view.wire_names[tool.key]
    namespace = view.namespace_of.get(tool.key)
    if namespace is not None and via != f"namespace:{namespace}":
        return Denied(
            reason=(
                f'Tool "{wire}" is an action of "{namespace}"; call it as '
                f'{namespace}({{"action": "{wire}", "args": {{...}}}}).'
            ),
            code="namespace",
            tool=tool,
        )
    exposure = view.exposure.get(tool.key)
    if exposure == "deferred" and via is None and not ctx.direct_calls:
        return Denied(
            reason=(
                f'Tool "{wire}" is deferred and cannot be called directly. Load its schema '
                f'with tool_search({{"tool_names": ["{wire}"]}}), then call it with '
                f'defer_execute({{"tool_name": "{wire}", "params": {{...}}}}).'
            ),
            code="not_loaded",
            tool=tool,
        )
    needs_search = view.config.require_search and not ctx.all_loaded
    if exposure == "deferred" and needs_search and wire not in ctx.loaded:
        return Denied(
            reason=(
                f'Load the schema of "{wire}" first: call tool_search({{"tool_names": '
                f'["{wire}"]}}), then defer_execute with arguments that follow it.'
            ),
            code="not_loaded",
            tool=tool,
        )
    return None


def _policy(view: SessionView, ctx: GateContext, tool: Tool, via: str | None) -> Denied | None:
    """Mode, reachability and blocklist checks, in that order."""
    wire = view.wire_names[tool.key]
    if view.exposure.get(tool.key) == "hidden":
        return Denied(reason=view.hidden_reason(tool), code="not_in_mode", tool=tool)
    denied = _route(view, ctx, tool, via)
    if denied is not None:
        return denied
    wrapper = via.split(":", 1)[1] if via and via.startswith("namespace:") else None
    if matches(ctx.blocked, (wire, tool.name, *((wrapper,) if wrapper else ()))):
        return Denied(reason=f'Tool "{wire}" is currently blocked.', code="blocked", tool=tool)
    return None


def _validate(tool: Tool, wire: str, arguments: object, via: str | None) -> CheckResult:
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


def _static_check(view: SessionView, call: ToolCall, ctx: GateContext) -> CheckResult:
    """Steps 1-6 (everything but hooks)."""
    resolved = _resolve(view, call)
    if isinstance(resolved, Denied):
        return resolved
    tool, arguments, via = resolved
    if _is_meta(view, tool):
        if matches(ctx.blocked, (tool.name,)):
            return Denied(
                reason=f'Tool "{tool.name}" is currently blocked.', code="blocked", tool=tool
            )
        return Allowed(tool=tool, wire_name=tool.name, arguments=dict(arguments))
    denied = _policy(view, ctx, tool, via)
    if denied is not None:
        return denied
    return _validate(tool, view.wire_names[tool.key], arguments, via)


def _is_meta(view: SessionView, tool: Tool) -> bool:
    """True for the session's own tool_search / defer_execute / load_toolkit."""
    return view.meta_tools.get(tool.name) is tool or view.toolkit_loader is tool


def _event(call: ToolCall, allowed: Allowed) -> ToolCallEvent:
    return ToolCallEvent(
        call=call,
        tool=allowed.tool,
        wire_name=allowed.wire_name,
        arguments=freeze(allowed.arguments),  # hooks read, never rewrite, arguments
        via=allowed.via,
    )


def _before_outcome(allowed: Allowed, hook: object, verdict: object) -> Denied | None:
    """Interpret a before-hook's return: None/False allow, a string denies."""
    if verdict is None or verdict is False:
        return None
    if isinstance(verdict, str):
        reason = verdict.strip() or f'The call to "{allowed.wire_name}" was denied by a policy.'
        return Denied(reason=reason, code="hook", tool=allowed.tool)
    raise UsageError(
        f"before-hook {getattr(hook, '__name__', hook)!r} returned {verdict!r}; return None "
        "to allow the call or a reason string to deny it"
    )


def _hook_failed(allowed: Allowed, hook: object, exc: Exception) -> Denied:
    """A before-hook that raises fails closed: the call is denied, the loop goes on."""
    return Denied(
        reason=(
            f'The call to "{allowed.wire_name}" was not run: a policy check failed '
            f"({type(exc).__name__}: {exc})."
        ),
        code="hook_error",
        tool=allowed.tool,
    )


def _after_outcome(call: ToolCall, result: ToolResult, hook: object, value: object) -> ToolResult:
    """Interpret an after-hook's return: None keeps the result, a ToolResult replaces it."""
    if value is None:
        return result
    if isinstance(value, ToolResult):
        if value.call_id != call.id:
            raise UsageError(
                f"after-hook {getattr(hook, '__name__', hook)!r} returned a result for call "
                f"{value.call_id!r}, but it must answer call {call.id!r}"
            )
        return value
    raise UsageError(
        f"after-hook {getattr(hook, '__name__', hook)!r} returned {value!r}; return None to "
        "keep the result or a ToolResult (same call_id) to replace it"
    )


def _after_failed(result: ToolResult, hook: object, exc: Exception) -> ToolResult:
    """An after-hook that raises leaves the result, noting the failure."""
    note = f"\n[post-processing {getattr(hook, '__name__', 'hook')} failed: {exc}]"
    return dataclasses.replace(result, content=result.content + note)


def _run_sync(value: Any, what: str) -> Any:
    """Resolve an awaitable returned by a hook/handler when called synchronously."""
    if not inspect.isawaitable(value):
        return value
    try:
        asyncio.get_running_loop()
    except RuntimeError:

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    if inspect.iscoroutine(value):
        value.close()
    raise _LoopRunning(f"{what} is async and an event loop is running; use the async API")


class _LoopRunning(UsageError):
    """A sync entry point met an async hook/handler inside a running loop (host misuse)."""


def check_tool_call(
    view: SessionView, call: ToolCall, ctx: GateContext | None = None
) -> CheckResult:
    """Decide whether a model's tool call may run, keyed on the real tool.

    Async before-hooks are awaited with `asyncio.run` when no loop is running; inside a
    running loop use `acheck_tool_call`.

    Args:
        view: The session's frozen tool view.
        call: The call as the model made it.
        ctx: Blocklist, loaded schemas and hooks (default: none).

    Returns:
        `Allowed` or `Denied`; never raises for bad model output.

    Raises:
        UsageError: An async hook was reached while an event loop is running.
    """
    ctx = ctx or GateContext()
    result = _static_check(view, call, ctx)
    if isinstance(result, Denied) or _is_meta(view, result.tool):
        return result
    return run_before_hooks(call, result, ctx)


def run_before_hooks(call: ToolCall, allowed: Allowed, ctx: GateContext) -> CheckResult:
    """Run the before-hooks on an allowed call; the first denial wins (sync entry)."""
    event = _event(call, allowed)
    for hook in ctx.before:
        try:
            verdict = _run_sync(hook(event), "a before-hook")
        except _LoopRunning:
            raise
        except Exception as exc:
            return _hook_failed(allowed, hook, exc)
        denied = _before_outcome(allowed, hook, verdict)
        if denied is not None:
            return denied
    return allowed


async def acheck_tool_call(
    view: SessionView, call: ToolCall, ctx: GateContext | None = None
) -> CheckResult:
    """Async `check_tool_call`: awaits async before-hooks."""
    ctx = ctx or GateContext()
    result = _static_check(view, call, ctx)
    if isinstance(result, Denied) or _is_meta(view, result.tool):
        return result
    return await arun_before_hooks(call, result, ctx)


async def arun_before_hooks(call: ToolCall, allowed: Allowed, ctx: GateContext) -> CheckResult:
    """Async `run_before_hooks` (awaits async hooks)."""
    event = _event(call, allowed)
    for hook in ctx.before:
        try:
            verdict = hook(event)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except Exception as exc:
            return _hook_failed(allowed, hook, exc)
        denied = _before_outcome(allowed, hook, verdict)
        if denied is not None:
            return denied
    return allowed


@dataclass(frozen=True, kw_only=True)
class Execution:
    """What running one call produced.

    Attributes:
        result: The tool result to append to history (same id as the call).
        check: The gate's decision.
        loaded: Wire names whose schemas a ``tool_search`` call just showed the model.
        toolkit: The toolkit a ``load_toolkit`` call just loaded (the session registers
            its tools), else None.
    """

    result: ToolResult
    check: CheckResult
    loaded: tuple[str, ...] = ()
    toolkit: str | None = None


HandlerLookup = Callable[[Tool], Callable[..., Any] | None]


def _render_output(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, ToolResult):
        return value.content
    try:
        return canonical_dumps(value)
    except (TypeError, ValueError):
        return str(value)


def _denied_result(call: ToolCall, check: Denied) -> Execution:
    result = ToolResult(call_id=call.id, name=call.name, content=check.reason, is_error=True)
    return Execution(result=result, check=check)


def _loader_result(
    view: SessionView, call: ToolCall, check: Allowed, ctx: GateContext
) -> Execution:
    kit = view.toolkits[str(check.arguments["toolkit_name"])]
    wires = tuple(wire_name("runtime", t.name, server=None) for t in kit.tools)
    text = render_toolkit_load(kit, wires, call_directly=ctx.direct_calls)
    result = ToolResult(call_id=call.id, name=call.name, content=text)
    return Execution(result=result, check=check, loaded=wires, toolkit=kit.name)


def _meta_result(
    view: SessionView, call: ToolCall, check: Allowed, ctx: GateContext
) -> Execution | None:
    if view.toolkit_loader is not None and check.tool is view.toolkit_loader:
        return _loader_result(view, call, check, ctx)
    if not _is_meta(view, check.tool) or check.tool.name != TOOL_SEARCH:
        return None
    outcome = run_tool_search(
        check.arguments, view.index, view.config, explain_missing=view.unavailable_reason
    )
    result = ToolResult(
        call_id=call.id, name=call.name, content=outcome.text, is_error=outcome.is_error
    )
    return Execution(result=result, check=check, loaded=outcome.loaded)


def _handler_for(check: Allowed, handlers: HandlerLookup) -> Callable[..., Any]:
    handler = handlers(check.tool)
    if handler is None:
        raise UsageError(
            f'no Python handler is registered for tool "{check.wire_name}" '
            f"(origin {check.tool.origin!r}); register one with handlers=..., or run the "
            "tool yourself after check_tool_call() allowed it"
        )
    return handler


def _result(call: ToolCall, value: Any = None, error: BaseException | None = None) -> ToolResult:
    if error is not None:
        content = f"Tool raised {type(error).__name__}: {error}"
        return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)
    is_error = value.is_error if isinstance(value, ToolResult) else False
    return ToolResult(
        call_id=call.id, name=call.name, content=_render_output(value), is_error=is_error
    )


def execute(
    view: SessionView, call: ToolCall, handlers: HandlerLookup, ctx: GateContext | None = None
) -> Execution:
    """Check a call and, if allowed, run it (``tool_search`` or a registered handler).

    Coroutine handlers and hooks are run with `asyncio.run` when no event loop is
    running; inside a loop use `aexecute`. Exceptions raised by a handler become error
    results; after-hooks may replace the result.

    Raises:
        UsageError: The call is allowed but no handler is registered for its tool, or an
            async handler/hook is reached from inside a running event loop.
    """
    ctx = ctx or GateContext()
    check = check_tool_call(view, call, ctx)
    if isinstance(check, Denied):
        return _denied_result(call, check)
    done = _meta_result(view, call, check, ctx)
    if done is not None:
        return done
    handler = _handler_for(check, handlers)
    try:
        result = _result(call, _run_sync(handler(**check.arguments), "the handler"))
    except _LoopRunning:
        raise
    except Exception as exc:  # whatever the tool raises is the model's to see
        result = _result(call, error=exc)
    return Execution(result=run_after_hooks(call, check, result, ctx), check=check)


def run_after_hooks(
    call: ToolCall, check: Allowed, result: ToolResult, ctx: GateContext
) -> ToolResult:
    """Run the after-hooks on a result (sync entry); each may replace it."""
    event = _event(call, check)
    for hook in ctx.after:
        try:
            value = _run_sync(hook(event, result), "an after-hook")
        except _LoopRunning:
            raise
        except Exception as exc:
            result = _after_failed(result, hook, exc)
            continue
        result = _after_outcome(call, result, hook, value)
    return result


async def aexecute(
    view: SessionView, call: ToolCall, handlers: HandlerLookup, ctx: GateContext | None = None
) -> Execution:
    """Async `execute`: awaits coroutine handlers and hooks.

    Raises:
        UsageError: The call is allowed but no handler is registered for its tool.
    """
    ctx = ctx or GateContext()
    check = await acheck_tool_call(view, call, ctx)
    if isinstance(check, Denied):
        return _denied_result(call, check)
    done = _meta_result(view, call, check, ctx)
    if done is not None:
        return done
    handler = _handler_for(check, handlers)
    try:
        value = handler(**check.arguments)
        if inspect.isawaitable(value):
            value = await value
        result = _result(call, value)
    except Exception as exc:
        result = _result(call, error=exc)
    return Execution(result=await arun_after_hooks(call, check, result, ctx), check=check)


async def arun_after_hooks(
    call: ToolCall, check: Allowed, result: ToolResult, ctx: GateContext
) -> ToolResult:
    """Async `run_after_hooks` (awaits async hooks)."""
    event = _event(call, check)
    for hook in ctx.after:
        try:
            value = hook(event, result)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            result = _after_failed(result, hook, exc)
            continue
        result = _after_outcome(call, result, hook, value)
    return result
