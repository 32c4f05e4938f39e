"""One gate for every tool call (dispatch layer).

`check_tool_call` resolves the call to the real tool — through ``defer_execute`` or a
namespace tool (``{"action": <sub-tool>, "args": {...}}``) when the model used a
wrapper — and applies, in order:

1. arguments are a JSON object;
2. the tool is known;
3. it is exposed in the session's mode, and its skill (if it belongs to one) is loaded;
4. it is reachable this way (a namespace sub-tool only through its namespace; a deferred
   tool through ``defer_execute``, or directly when the strategy sends deferred tools'
   definitions (``flat``, provider-native search); with ``require_search``, only after its
   schema was loaded, by ``tool_search`` or by the provider's own search; under a
   provider-native strategy always only once a request revealed it: `GateContext.reveal_first`);
5. it is not blocked;
6. its arguments are valid against its schema;
7. before-hooks allow it (they see the real tool's name and arguments and may deny).

The result is `Allowed` (the real tool and the arguments to run it with) or `Denied` (a
model-readable reason and a machine-readable code), a value carrying the call and what it
was decided under (`GateStamp`): `execute` runs a decision as it is while `holds` says
the session has not changed since, so before-hooks never run twice for one call.
`execute` / `aexecute` run the check,
then ``tool_search`` or a registered Python handler, then after-hooks (which may rewrite
the result, e.g. add guidance that only makes sense once the tool has run);
``load_toolkit`` returns the toolkit's schemas and reports the load in
`Execution.toolkit` for the session to record, ``load_skill`` returns the skill's
instructions and reports it in `Execution.skill`. Bad calls
always come back as error `ToolResult` values paired with the call's id, never as
exceptions that stop the agent loop.

Library-owned tools (memory, ``new_context``) are registry tools like any other: the same
steps apply to them. Calls arrive in any `CallLike` shape and are normalized once by the
caller (`contextchef.dispatch._calls`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from contextchef._echo import echo
from contextchef._errors import shown
from contextchef._json import JsonValue, canonical_dumps
from contextchef.deferred._groups import NamespaceView, Toolkit
from contextchef.deferred._meta import DEFER_EXECUTE, SEARCH_USAGE, TOOL_SEARCH
from contextchef.deferred._view import SessionView, kit_members
from contextchef.dispatch._calls import parse_arguments
from contextchef.dispatch._hooks import arun_before_hooks, run_before_hooks
from contextchef.dispatch._types import (
    Allowed,
    CheckResult,
    Denied,
    GateContext,
    GateStamp,
)
from contextchef.dispatch._unknown import callable_now, listed, named_tools, unknown_tool
from contextchef.exposure._policy import matches
from contextchef.history._arguments import parse_json_object, unreadable_arguments
from contextchef.history._call_names import MALFORMED_CALL, written_name
from contextchef.history._messages import ToolCall
from contextchef.tools._callable import handler_problems
from contextchef.tools._property_keys import wire_keys
from contextchef.tools._schema import strip_strict_nulls
from contextchef.tools._tool import Tool
from contextchef.tools._validate import integral, validation_errors

__all__ = [
    "CUT_OFF",
    "MALFORMED_CALL",
    "ActionProblem",
    "acheck_tool_call",
    "check_tool_call",
    "forced_refusal",
    "holds",
    "is_meta",
    "kit_tools",
    "pick_name",
    "resolve_action",
]


CUT_OFF = unreadable_arguments("were cut off at the output limit")
"""The arguments the last call of a reply cut off at its token limit is recorded with (the
readers in ``providers/``: Anthropic ``stop_reason`` ``max_tokens``, Chat ``finish_reason``
``length``, Responses ``max_output_tokens``, Gemini ``MAX_TOKENS``, Interactions
``incomplete``); the gate answers it, never runs it: Anthropic says a ``tool_use`` block in
such a reply may be incomplete and to retry with a higher ``max_tokens``
(https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons). Sent back
as ``{}`` (not a JSON object), like any unreadable arguments."""


def _cut_off(view: SessionView, name: str) -> Denied:
    tool = view.wrapper(name) or view.lookup(name)
    return Denied(
        reason=f'This call to "{echo(name)}" was cut off: your reply reached its output token '
        "limit before the call was complete, so it was not run. Call it again with its complete "
        "arguments (if they are long, split the work into smaller calls).",
        code="cut_off",
        tool=tool,
    )


def _deferred_target(view: SessionView, name: str, ctx: GateContext | None) -> Tool | Denied:
    """The tool a ``defer_execute`` call names, or the denial.

    One rule: the tool whose wire name is `name`; else the only tool the model may call
    now whose own name or wire name equals `name` ignoring case (``get_issue`` and
    ``GET_ISSUE`` alike); else the answer naming the candidates (`unknown_tool`).
    """
    tool = view.by_wire_name.get(name)
    if tool is not None:
        return tool
    folded = name.casefold()
    named = [
        w
        for w in named_tools(view, name, ctx or GateContext()) or ()
        if folded in (w.casefold(), view.by_wire_name[w].name.casefold())
    ]
    if len(named) == 1:
        return view.by_wire_name[named[0]]
    return unknown_tool(view, name, ctx, target=True)


MAX_PROBLEMS = 20
"""Most argument problems listed in one denial."""

MAX_SCHEMA_ECHO = 4_000
"""Most characters of the expected schema echoed in one denial."""


def _invalid(tool: Tool, wire: str, problems: list[str]) -> Denied:
    """A denial for invalid arguments, echoing the expected schema.

    At most `MAX_PROBLEMS` problems are listed and `MAX_SCHEMA_ECHO` characters of the
    schema echoed (a huge schema points to ``tool_search`` instead). Library-owned tools'
    small static schemas are in every payload that offers them, so theirs is not echoed.
    """
    shown = [f"- {p}" for p in problems[:MAX_PROBLEMS]]
    if len(problems) > MAX_PROBLEMS:
        shown.append(f"- ... and {len(problems) - MAX_PROBLEMS} more")
    lines = "\n".join(shown)
    schema = ""
    if tool.source != "library":
        text = canonical_dumps(wire_keys(tool).schema)
        if len(text) > MAX_SCHEMA_ECHO:
            text = (
                f"{text[:MAX_SCHEMA_ECHO]}... [{len(text):,} characters in all; "
                f'tool_search({{"tool_names": ["{wire}"]}}) shows its parameters]'
            )
        schema = f"\nExpected input schema:\n{text}"
    reason = f'Invalid arguments for tool "{wire}":\n{lines}{schema}'
    return Denied(reason=reason, code="invalid_arguments", tool=tool)


Resolved = tuple[Tool, Any, str | None] | Denied
"""The real tool, its raw arguments and the wrapper used (None: called directly), or a
denial."""


def _resolve(view: SessionView, call: ToolCall, ctx: GateContext | None = None) -> Resolved:
    """The real tool, its raw arguments and the wrapper used, or a denial."""
    if call.arguments == CUT_OFF:
        return _cut_off(view, written_name(call) or call.name)
    if call.name == MALFORMED_CALL:
        return unknown_tool(view, call.name, ctx, written_name(call))
    arguments = parse_arguments(call)
    if isinstance(arguments, str):
        tool = view.wrapper(call.name) or view.lookup(call.name)
        if tool is None:
            return unknown_tool(view, call.name, ctx)
        if tool is view.meta_tools.get(TOOL_SEARCH):  # say the shape (a native call's too)
            arguments += f' {SEARCH_USAGE}, e.g. {{"queries": ["read file"]}}.'
        return Denied(reason=arguments, code="malformed_arguments", tool=tool)
    meta = view.meta_tools.get(call.name)
    if meta is not None and call.name == DEFER_EXECUTE:
        problems = validation_errors(meta.input_schema, arguments)
        if problems:
            return _invalid(meta, DEFER_EXECUTE, problems)
        if view.wrapper(str(arguments["tool_name"])) is not None:  # a meta-tool, namespace...
            named = arguments["tool_name"]
            return Denied(
                reason=(
                    "defer_execute cannot run itself: call it once, with the deferred tool's "
                    "name and its params."
                    if named == DEFER_EXECUTE
                    else f"defer_execute runs deferred tools; call {named} directly instead."
                ),
                code="invalid_arguments",
                tool=meta,
            )
        target = _deferred_target(view, str(arguments["tool_name"]), ctx)
        return (target, arguments["params"], DEFER_EXECUTE) if isinstance(target, Tool) else target
    if meta is not None:
        return meta, arguments, None
    if call.name in view.namespaces:
        return _resolve_action(view, view.namespaces[call.name], arguments, ctx or GateContext())
    if view.toolkit_loader is not None and call.name == view.toolkit_loader.name:
        return _resolve_loader(view, view.toolkit_loader, arguments, ctx or GateContext())
    if view.skill_loader is not None and call.name == view.skill_loader.name:
        return _resolve_skill(view, view.skill_loader, arguments)
    tool = view.lookup(call.name)
    if tool is None:
        return unknown_tool(view, call.name, ctx)
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
    ns: NamespaceView, arguments: Mapping[str, Any], callable_: Collection[str] | None = None
) -> tuple[Tool, dict[str, JsonValue]] | ActionProblem:
    """A namespace call's arguments -> (the sub-tool, its arguments), or the problem.

    ``args`` may be omitted for an action without required arguments (``{}``), and may
    be JSON text holding the object (models often nest arguments that way). The action is
    an exact member name, else matched ignoring case among `callable_` (the actions the
    model may call now; default: those of the mode), which the answer also lists.
    """
    action = arguments.get("action")
    problems = [f"unexpected property {shown(k)}" for k in sorted(arguments) if k not in _NS_KEYS]
    if not isinstance(action, str):
        problems.insert(0, "'action' is required and must be a string")
    args = parse_json_object(arguments.get("args", {}))
    if isinstance(args, str):
        problems.append(f"'args' must be an object ({args})")
    if problems or not isinstance(action, str) or isinstance(args, str):
        return ActionProblem(code="invalid_arguments", problems=tuple(problems))
    names = ns.actions if callable_ is None else sorted(callable_)
    picked = action if action in ns.members else pick_name(action, names)
    if isinstance(picked, str):
        return ns.members[picked], args
    return ActionProblem(
        code="unknown_tool",
        message=_no_such("action", action, picked, names, f' for "{ns.name}"'),
    )


def pick_name(name: str, names: Collection[str]) -> str | list[str]:
    """The one of `names` a model-written `name` means, else the candidates (maybe none).

    The lookup every meta-tool makes for a name it is given (a namespace action, a
    toolkit, a skill), as ``tool_search`` matches names: `name` exactly, else the only
    name equal to it ignoring case. Several equal ignoring case are returned, sorted,
    for the answer to name them (none is guessed).
    """
    if name in names:
        return name
    folded = name.casefold()
    same = sorted(n for n in names if n.casefold() == folded)
    return same[0] if len(same) == 1 else same


def _no_such(kind: str, name: str, same: list[str], valid: Iterable[str], where: str = "") -> str:
    """The answer to a `kind` name that `pick_name` did not resolve."""
    if same:
        return (
            f'"{echo(name)}" matches several {kind}s{where} ignoring case: {listed(same)}. '
            f"Use one exactly."
        )
    return f'Unknown {kind} "{echo(name)}"{where}. Available {kind}s: {", ".join(valid)}.'


def _resolve_action(
    view: SessionView, ns: NamespaceView, arguments: Mapping[str, Any], ctx: GateContext
) -> Resolved:
    """A namespace call -> (sub-tool, its arguments, ``namespace:<name>``), or a denial."""
    reach = [a for a in ns.actions if callable_now(view, ns.members[a], a, ctx)]
    resolved = resolve_action(ns, arguments, reach)
    if isinstance(resolved, ActionProblem):
        if resolved.code == "invalid_arguments":
            return _invalid(ns.tool, ns.name, list(resolved.problems))
        return Denied(reason=resolved.message, code=resolved.code, tool=ns.tool)
    member, args = resolved
    return member, args, f"namespace:{ns.name}"


def kit_tools(view: SessionView, kit: Toolkit, ctx: GateContext) -> list[tuple[str, Tool]]:
    """(wire name, tool) of `kit`'s tools the model may call now (modes, blocklist...)."""
    return [(w, t) for w, t in kit_members(kit, view.modes) if callable_now(view, t, w, ctx)]


def _resolve_loader(
    view: SessionView, loader: Tool, arguments: Mapping[str, Any], ctx: GateContext
) -> Resolved:
    """A ``load_toolkit`` call -> (the loader, its arguments, None), or a denial.

    Only toolkits with a tool the model may call now are loaded or listed.
    """
    problems = validation_errors(loader.input_schema, arguments)
    if problems:
        return _invalid(loader, loader.name, problems)
    name = str(arguments["toolkit_name"])
    kits = [k for k in sorted(view.toolkits) if kit_tools(view, view.toolkits[k], ctx)]
    picked = pick_name(name, kits)
    if not isinstance(picked, str):
        reason = _no_such("toolkit", name, picked, kits)
        return Denied(reason=reason, code="unknown_tool", tool=loader)
    return loader, {**arguments, "toolkit_name": picked}, None


def _resolve_skill(view: SessionView, loader: Tool, arguments: Mapping[str, Any]) -> Resolved:
    """A ``load_skill`` call -> (the loader, its arguments, None), or a denial.

    A name no skill has is answered with the valid names (not the schema's enum error).
    """
    name = arguments.get("name")
    if isinstance(name, str):
        picked = pick_name(name, view.skills)
        if not isinstance(picked, str):
            reason = _no_such("skill", name, picked, view.skills)
            return Denied(reason=reason, code="unknown_skill", tool=loader)
        arguments = {**arguments, "name": picked}
    problems = validation_errors(loader.input_schema, arguments)
    if problems:
        return _invalid(loader, loader.name, problems)
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
        load = (
            "Its schema is loaded already: call it"
            if wire in ctx.loaded or ctx.all_loaded
            else f'Load its schema with tool_search({{"tool_names": ["{wire}"]}}), then call it'
        )
        return Denied(
            reason=(
                f'Tool "{wire}" is deferred and cannot be called directly. {load} with '
                f'defer_execute({{"tool_name": "{wire}", "params": {{...}}}}).'
            ),
            code="not_loaded",
            tool=tool,
        )
    needs_search = (view.config.require_search or ctx.reveal_first) and not ctx.all_loaded
    if exposure == "deferred" and needs_search and wire not in ctx.loaded:
        return Denied(reason=_load_first(wire, ctx), code="not_loaded", tool=tool)
    return None


def _load_first(wire: str, ctx: GateContext) -> str:
    """How to load a deferred tool's schema, with the tools this request offered."""
    offered = ctx.meta_tools
    search = offered is None or TOOL_SEARCH in offered
    execute = offered is None or DEFER_EXECUTE in offered
    if search and execute:
        return (
            f'Load the schema of "{wire}" first: call tool_search({{"tool_names": '
            f'["{wire}"]}}), then defer_execute with arguments that follow it.'
        )
    if search:
        return (
            f'Load "{wire}" first: call tool_search({{"tool_names": ["{wire}"]}}), then '
            "call it by name."
        )
    return f'"{wire}" has not been revealed yet: find it with your tool search first.'


def _policy(view: SessionView, ctx: GateContext, tool: Tool, via: str | None) -> Denied | None:
    """Mode, reachability and blocklist checks, in that order."""
    wire = view.wire_names[tool.key]
    if view.exposure.get(tool.key) == "hidden":
        return Denied(reason=view.hidden_reason(tool), code="not_in_mode", tool=tool)
    if ctx.withdrawn:
        gone = dict(ctx.withdrawn).get(wire)
        if gone is not None:
            return Denied(reason=gone, code="withdrawn", tool=tool)
    locked = view.skill_lock(wire, ctx.skills)
    if locked is not None:
        return Denied(reason=locked, code="skill_not_loaded", tool=tool)
    denied = _route(view, ctx, tool, via)
    if denied is not None:
        return denied
    # a blocked wrapper (a namespace, defer_execute) blocks every call made through it
    wrapper = via.split(":", 1)[-1] if via else None
    if matches(ctx.blocked, (wire, tool.name, *((wrapper,) if wrapper else ()))):
        blocked = wire if matches(ctx.blocked, (wire, tool.name)) else wrapper
        return Denied(reason=f'Tool "{blocked}" is currently blocked.', code="blocked", tool=tool)
    return None


def forced_refusal(
    view: SessionView,
    blocked: tuple[str, ...],
    skills: Iterable[str],
    withdrawn: Mapping[str, str],
    name: str,
) -> str | None:
    """Why the gate refuses the tool `name` whatever the arguments, or None.

    What a forced ``tool_choice`` is checked against (`providers._tool_choice`): hidden by
    a mode, withdrawn, of a skill not loaded (`skills`: those loaded), blocked; how it is
    reached is not asked. A name no registered tool has (a meta-tool, a provider's tool)
    is None.
    """
    tool = view.lookup(name)
    if tool is None:
        return None
    ctx = GateContext(
        blocked=blocked,
        skills=frozenset(skills),
        withdrawn=tuple(withdrawn.items()),
        direct_calls=True,
        all_loaded=True,
    )
    denied = _policy(view, ctx, tool, None)
    return None if denied is None else denied.reason


def _validate(
    tool: Tool, wire: str, arguments: object, via: str | None, handler: object = None
) -> CheckResult:
    """Step 6: `arguments` against the tool's schema, then its handler's parameter types.

    A function tool's types are asked too (`handler_problems`), so the gate never allows
    what the handler would refuse (``1e20`` for an ``int``).
    """
    if not isinstance(arguments, Mapping):
        return Denied(
            reason=f'Arguments for tool "{wire}" must be a JSON object.',
            code="malformed_arguments",
            tool=tool,
        )
    keys = wire_keys(tool)  # the model wrote the keys it was shown (a '$top' goes as '_top')
    stray = keys.stray_keys(arguments)
    args = keys.real_arguments(dict(arguments))  # checked against the tool's real schema
    args = strip_strict_nulls(args, tool.input_schema) if tool.strict else args
    problems = keys.in_wire_terms(validation_errors(tool.input_schema, args)) + stray
    if problems:
        return _invalid(tool, wire, problems)
    args = integral(tool.input_schema, args)  # 2.0 passes as an integer: hand over 2
    refused = handler_problems(handler, args) if handler is not None else ()
    if refused:
        return _invalid(tool, wire, keys.in_wire_terms(list(refused)))
    return Allowed(tool=tool, wire_name=wire, arguments=args, via=via)


def _static_check(view: SessionView, call: ToolCall, ctx: GateContext) -> CheckResult:
    """Steps 1-6 (everything but hooks)."""
    offered = ctx.meta_tools
    if offered is not None and call.name in view.meta_tools and call.name not in offered:
        return unknown_tool(view, call.name, ctx)  # the request did not offer it
    resolved = _resolve(view, call, ctx)
    if isinstance(resolved, Denied):
        return resolved
    tool, arguments, via = resolved
    if is_meta(view, tool):
        if matches(ctx.blocked, (tool.name,)):
            return Denied(
                reason=f'Tool "{tool.name}" is currently blocked.', code="blocked", tool=tool
            )
        args = integral(tool.input_schema, dict(arguments))
        return Allowed(tool=tool, wire_name=tool.name, arguments=args)
    denied = _policy(view, ctx, tool, via)
    if denied is not None:
        return denied
    return _validate(tool, view.wire_names[tool.key], arguments, via, view.handler(tool))


def is_meta(view: SessionView, tool: Tool) -> bool:
    """True for the session's own tool_search / defer_execute / load_toolkit / load_skill."""
    return (
        view.meta_tools.get(tool.name) is tool
        or view.toolkit_loader is tool
        or view.skill_loader is tool
    )


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
    if isinstance(result, Allowed):
        result = run_before_hooks(call, result, ctx)
    return _stamped(result, call, GateStamp(view=view, ctx=ctx))


async def acheck_tool_call(
    view: SessionView, call: ToolCall, ctx: GateContext | None = None
) -> CheckResult:
    """Async `check_tool_call`: awaits async before-hooks."""
    ctx = ctx or GateContext()
    result = _static_check(view, call, ctx)
    if isinstance(result, Allowed):
        result = await arun_before_hooks(call, result, ctx)
    return _stamped(result, call, GateStamp(view=view, ctx=ctx))


def _stamped(result: CheckResult, call: ToolCall, stamp: GateStamp) -> CheckResult:
    """``dataclasses.replace(result, call=call, stamp=stamp)``, without the field walk.

    Every field of `Allowed` and `Denied` is an init field and neither has a
    ``__post_init__``, so the instance dict holds the arguments that rebuild it.
    """
    return type(result)(**{**vars(result), "call": call, "stamp": stamp})


_HOOKED = ("hook", "hook_error")  # denials a before-hook made: the hooks ran


def holds(check: CheckResult, view: SessionView, ctx: GateContext) -> bool:
    """Whether a decision the gate took still stands under `view` and `ctx`.

    It does when before-hooks took part in it (an allowed call with hooks registered, or
    a hook's denial) and nothing changed since: the same view (by identity) and the same
    gate context, except schemas loaded since (loading only adds). Otherwise the caller
    gates the call again, which costs no hook and sees the newest state.
    """
    stamp = check.stamp
    if stamp is None or check.call is None or stamp.view is not view or not stamp.ctx.before:
        return False
    if isinstance(check, Denied) and check.code not in _HOOKED:
        return False
    old, new = stamp.ctx, ctx
    empty: frozenset[str] = frozenset()
    same = replace(old, loaded=empty) == replace(new, loaded=empty)
    return same and old.loaded <= new.loaded
