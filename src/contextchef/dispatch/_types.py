"""What the gate decides and what hooks see: `Allowed`, `Denied`, `Execution`, hook types.

A decision is a value: it carries the call it was taken on and what it was taken under
(`GateStamp`), so the host that checked a call hands the decision itself to ``execute``
or ``run_tools`` and nothing is gated twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from contextchef._json import JsonValue
from contextchef.history._messages import ToolCall, ToolResult
from contextchef.tools._tool import Tool

if TYPE_CHECKING:
    from contextchef.deferred._view import SessionView

__all__ = [
    "AfterHook",
    "Allowed",
    "BeforeHook",
    "CheckResult",
    "Denied",
    "Execution",
    "Fallback",
    "GateContext",
    "GateStamp",
    "HandlerLookup",
    "ToolCallEvent",
]


@dataclass(frozen=True, eq=False)
class GateStamp:
    """What a decision was taken under: the tool view (by identity) and the gate context.

    Attributes:
        view: The session's frozen tool view at the check.
        ctx: The `GateContext` at the check (its hooks are what ran).
    """

    view: SessionView
    ctx: GateContext


@dataclass(frozen=True, kw_only=True)
class Allowed:
    """The call may run.

    Attributes:
        tool: The real tool (the target of ``defer_execute``, or a meta-tool itself).
        wire_name: The tool's wire name.
        arguments: Validated arguments to run it with (strict-mode nulls removed), under
            the tool's real property keys (`contextchef.tools._property_keys`: a key sent
            to the model as ``_top`` comes back as ``$top``).
        via: ``"defer_execute"`` or ``"namespace:<namespace>"`` when the call came
            through a wrapper, else None.
    """

    tool: Tool
    wire_name: str
    arguments: Mapping[str, JsonValue]
    via: str | None = None
    decision: Literal["allowed"] = "allowed"
    call: ToolCall | None = field(default=None, compare=False, repr=False)
    """The call decided on (set by the gate): ``execute(decision)`` runs it."""
    stamp: GateStamp | None = field(default=None, compare=False, repr=False)
    """What the decision was taken under (set by the gate)."""


@dataclass(frozen=True, kw_only=True)
class Denied:
    """The call must not run.

    Attributes:
        reason: Model-readable explanation, sent back as an error tool result.
        code: Machine-readable kind: ``malformed_arguments``, ``cut_off`` (the last
            call of a reply cut off at its output token limit), ``unknown_tool``,
            ``not_in_mode``, ``not_loaded`` (deferred tool called directly, or before
            its schema was loaded under ``require_search``), ``namespace`` (a
            namespace sub-tool called other than through its namespace),
            ``skill_not_loaded`` (a tool of a skill not loaded yet), ``unknown_skill``
            (``load_skill`` with a name no skill has), ``withdrawn`` (its source took it
            back: an MCP server removed it or disconnected), ``blocked``,
            ``invalid_arguments``, ``hook``.
        tool: The resolved tool, when the name was known.
    """

    reason: str
    code: str
    tool: Tool | None = None
    decision: Literal["denied"] = "denied"
    call: ToolCall | None = field(default=None, compare=False, repr=False)
    """The call decided on (set by the gate): ``execute(decision)`` answers it."""
    stamp: GateStamp | None = field(default=None, compare=False, repr=False)
    """What the decision was taken under (set by the gate)."""


CheckResult = Allowed | Denied


@dataclass(frozen=True, kw_only=True)
class ToolCallEvent:
    """What hooks see: the real tool, never the ``defer_execute`` wrapper.

    Attributes:
        call: The call as the model made it.
        tool: The real tool.
        wire_name: Its wire name.
        arguments: The validated arguments, under the tool's real property keys.
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
        reveal_by_reference: A ``tool_search`` result reveals the tools it found by
            reference (`ToolResult.references`: Anthropic ``tool_reference`` blocks), and
            its text tells the model to call them by name.
        search_direct: The tools ``tool_search`` finds are called by name (a
            provider-native strategy reveals them), not through ``defer_execute``.
        reveal_loaded: Whatever is loaded (a toolkit, a skill, a search result) is
            revealed to the model by the next request (mid-conversation tool changes),
            so it is callable by name from then on.
        reveal_first: A deferred tool is callable by name only once the provider revealed
            it (a provider-native strategy: the tool is declared with ``defer_loading``,
            which "only loads when returned via tool_reference from tool search", or by a
            tool change; research note provider-native-disclosure.md §1.1, §1.4, §2.1);
            `loaded` then holds the tools revealed by what was sent, not what was loaded.
        result_references: Any tool result may reveal tools by reference
            (`ToolResult.references`: our ``tool_search`` is an ordinary tool whose
            result carries Anthropic ``tool_reference`` blocks), so a ``load_toolkit``
            result reveals the toolkit's tools itself.
        meta_tools: The meta-tools the request offered (``tool_search``,
            ``defer_execute``); a call to another one is an unknown tool. None: all.
        skills: Names of the skills loaded; the tools of the others are refused.
        withdrawn: (wire name, reason) of tools their source took back (an MCP server
            removed them or disconnected): refused with the reason, and left out of
            ``tool_search`` results, though still declared (declarations never change).
    """

    blocked: tuple[str, ...] = ()
    loaded: frozenset[str] = frozenset()
    before: tuple[BeforeHook, ...] = ()
    after: tuple[AfterHook, ...] = field(default_factory=tuple)
    direct_calls: bool = False
    all_loaded: bool = False
    reveal_by_reference: bool = False
    search_direct: bool = False
    reveal_loaded: bool = False
    reveal_first: bool = False
    result_references: bool = False
    meta_tools: frozenset[str] | None = None
    skills: frozenset[str] = frozenset()
    withdrawn: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Execution:
    """What running one call produced.

    Attributes:
        result: The tool result to append to history (same id as the call).
        check: The gate's decision.
        loaded: Wire names whose schemas a ``tool_search`` call just showed the model.
        toolkit: The toolkit a ``load_toolkit`` call just loaded (the session registers
            its tools), else None.
        skill: The skill a ``load_skill`` call just loaded (the session records it, and
            its tools in `loaded`), else None.
    """

    result: ToolResult
    check: CheckResult
    loaded: tuple[str, ...] = ()
    toolkit: str | None = None
    skill: str | None = None


HandlerLookup = Callable[[Tool], Callable[..., Any] | None]

Fallback = Callable[[ToolCall, Allowed], Any]
"""Runs an allowed call whose tool has no registered handler: ``fallback(call, allowed)``
gets the model's call and the gate's decision (`Allowed.tool` with its ``server`` and
original ``name``, the validated `Allowed.arguments`) and returns the output (text, JSON
data or a `ToolResult`), or an awaitable of it in `arun_tools`."""
