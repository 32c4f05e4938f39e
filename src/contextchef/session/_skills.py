"""`ContextChef`'s skills: named instructions that bring their tools (session layer).

A skill (`contextchef.deferred._skills.Skill`) names tools already registered; its
tools are out of reach (not listed, not found, refused by the gate) until the skill is
loaded, by the model through ``load_skill`` (`execute` records it) or by the host
(`Skills.load`, which appends one synthetic exchange so the model sees the
instructions once). Loaded skills, and the skills themselves, ride snapshots; after a
compaction that summarized a load away, the summary restates the skill's instructions
(`Skills.reminder`, called by ``compact``).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence

from contextchef._errors import ToolNameConflictError, UnknownToolError, UsageError, shown
from contextchef._json import canonical_dumps
from contextchef.deferred._groups import LOAD_TOOLKIT
from contextchef.deferred._skills import LOAD_SKILL, Skill, SkillLike, parse_skill
from contextchef.dispatch._execute import skill_text
from contextchef.history._arguments import parse_json_object
from contextchef.history._messages import (
    Message,
    ToolCall,
    ToolResult,
    assistant,
    check_message,
    tool_results,
)
from contextchef.session._dispatching import Dispatcher
from contextchef.session._ledger import HOST_CALL_PREFIX
from contextchef.session._state import SessionState
from contextchef.session._toolset import SessionTools

logger = logging.getLogger("contextchef")

__all__ = ["SKILL_CALL_PREFIX", "Skills", "resolve_skills", "skill_loads"]

SKILL_CALL_PREFIX = HOST_CALL_PREFIX
"""Ids of the ``load_skill`` calls the host makes: this prefix, the skill, a counter."""

MAX_CALL_ID = 64
"""Longest synthetic call id (the strictest provider limit on call ids)."""


def _resolve_tool(
    tools: SessionTools, members: Mapping[tuple[str, str], str], skill: str, name: str
) -> str:
    """The wire name of the registered tool `name` means (wire name, or a unique own name).

    Raises:
        UnknownToolError: No registered tool has this name.
        UsageError: Several tools have this own name, or it is contextchef's own tool or
            a namespace action (neither can be held back by a skill).
    """
    registry = tools.registry
    found = registry.by_wire_name(name)
    candidates = [found] if found is not None else [t for t in registry.tools if t.name == name]
    if len(candidates) > 1:
        wires = sorted(registry.wire_name_for(t) for t in candidates)
        raise UsageError(
            f"skill {shown(skill)}: the tool name {shown(name)} matches {len(wires)} tools "
            f"{wires}; "
            "give its wire name"
        )
    if not candidates:
        known = sorted(registry.wire_name_for(t) for t in registry.tools)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        raise UnknownToolError(
            f"skill {shown(skill)} names the tool {shown(name, 80)}, which is not "
            f"registered; closest "
            f"names: {close} (register a skill's tools before the skill)",
            name=name,
            available=close,
        )
    tool = candidates[0]
    if tool.source == "library":
        raise UsageError(
            f"skill {shown(skill)}: {shown(name)} is one of contextchef's own tools, which "
            f"are always "
            "available; leave it out of the skill"
        )
    if tool.key in members:
        raise UsageError(
            f"skill {shown(skill)}: {shown(name)} is an action of the namespace "
            f"{shown(members[tool.key])} "
            "and is reached only through it; a skill holds tools outside namespaces"
        )
    return registry.wire_name_for(tool)


def resolve_skills(items: Sequence[object], tools: SessionTools) -> tuple[Skill, ...]:
    """Check and lint new skills (or a snapshot's); returns them with their tools' wire names.

    Nothing is registered here (the caller registers the result), so a failure leaves the
    session as it was; the lint keeps what it found (``volatile_lint``).

    Raises:
        UsageError: A malformed skill (see `parse_skill`), a name given twice or already
            registered, a tool name that matches several tools, contextchef's own tool
            or a namespace action.
        ToolNameConflictError: A skill name is taken by a tool, a namespace or
            contextchef's own tools, or a tool or namespace is named ``load_skill``.
        UnknownToolError: A skill names a tool that is not registered.
        VolatileValueError: A per-request-looking name or description, in ``"raise"`` mode.
    """
    parsed = [parse_skill(item) for item in items]
    names = [s.name for s in parsed]
    registered = {s.name for s in tools.skills}
    twice = sorted({n for n in names if names.count(n) > 1 or n in registered})
    if twice:
        raise UsageError(f"skills {twice} are registered twice; skill names must be unique")
    known = tools.known_names()
    if not registered and LOAD_SKILL in known:
        raise ToolNameConflictError(
            "a registered tool or namespace is named 'load_skill', which skills need; rename it",
            conflicts=[(LOAD_SKILL, ("builtin", "contextchef tool"))],
        )
    clashes = sorted(n for n in names if n in known | {LOAD_SKILL, LOAD_TOOLKIT})
    if clashes:
        raise ToolNameConflictError(
            f"skill names {clashes} are taken by a tool, a namespace or contextchef's own "
            "tools; pick other names",
            conflicts=[(n, ("skill",)) for n in clashes],
        )
    members = {t.key: ns.name for ns in tools.namespaces for t in ns.tools}
    out = []
    for skill in parsed:
        wires = [_resolve_tool(tools, members, skill.name, n) for n in skill.tools]
        out.append(dataclasses.replace(skill, tools=tuple(dict.fromkeys(wires))))
    tools.lint_prefix(out)
    return tuple(out)


def skill_loads(messages: Sequence[Message]) -> set[str]:
    """Names of the skills a ``load_skill`` call answered without error in `messages` loads."""
    answered = {
        r.call_id
        for m in messages
        for r in m.tool_results
        if r.name == LOAD_SKILL and not r.is_error
    }
    names: set[str] = set()
    for call in (c for m in messages for c in m.tool_calls):
        arguments = parse_json_object(call.arguments) if call.name == LOAD_SKILL else None
        if isinstance(arguments, dict) and call.id in answered:
            name = arguments.get("name")
            names.update([name] if isinstance(name, str) else [])
    return names


def _call_id(history: Sequence[Message], name: str) -> str:
    """A call id for the host's load of `name`, unused in `history` (deterministic)."""
    taken = {c.id for m in history for c in m.tool_calls}
    stem = f"{SKILL_CALL_PREFIX}{name}_"
    if len(stem) + 4 > MAX_CALL_ID:  # a long skill name: a digest keeps ids short
        stem = f"{SKILL_CALL_PREFIX}{hashlib.sha256(name.encode()).hexdigest()[:16]}_"
    n = 1 + sum(1 for i in taken if i.startswith(stem) and i[len(stem) :].isdigit())
    while f"{stem}{n}" in taken:
        n += 1
    return f"{stem}{n}"


def _check_appendable(history: Sequence[Message]) -> None:
    """The host may append a model turn: the history is empty or ends with the user.

    Raises:
        UsageError: It ends with the model's turn, or some of the model's last calls are
            unanswered.
    """
    if history and history[-1].role != "user":
        raise UsageError(
            "load_skill adds a model turn (a load_skill call) and its result; call it when "
            "the history is empty or ends with a user message (append the user's message "
            "first)"
        )
    last = max((i for i, m in enumerate(history) if m.tool_calls), default=None)
    if last is None:
        return
    answered = {r.call_id for m in history[last + 1 :] for r in m.tool_results}
    open_calls = [c.id for c in history[last].tool_calls if c.id not in answered]
    if open_calls:
        raise UsageError(
            f"the model's calls {open_calls} are not answered yet; append their results "
            "before load_skill"
        )


class Skills:
    """A session's skills: registration, host loads, compaction reminders.

    Args:
        state: The session's data (loaded skills, history).
        tools: The session's tools (the skills are registered there).
        dispatcher: The gate a host load passes through.
    """

    def __init__(self, *, state: SessionState, tools: SessionTools, dispatcher: Dispatcher) -> None:
        self._state = state
        self._tools = tools
        self._dispatcher = dispatcher

    def register(self, skills: Iterable[SkillLike]) -> tuple[Skill, ...]:
        """Register skills (all or nothing); see `ContextChef.register_skills`."""
        if isinstance(skills, (str, bytes, Mapping, Skill)) or not isinstance(skills, Iterable):
            raise UsageError(f"skills must be a list, got {type(skills).__name__}")
        added = resolve_skills(list(skills), self._tools)
        self._tools.set_skills((*self._tools.skills, *added))
        return tuple(sorted(added, key=lambda s: s.name))

    def load(self, name: str) -> ToolResult:
        """Load a skill for the model from the host; see `ContextChef.load_skill`."""
        view = self._tools.view()
        if not isinstance(name, str) or name not in view.skills:
            raise UsageError(
                f"unknown skill {shown(name, 80)}; registered skills: {sorted(view.skills)}"
            )
        again = name in self._state.loaded_skills
        history = self._state.history
        if not again:
            _check_appendable(history)
            if self._state.target is None and view.deferred:
                logger.warning(
                    "contextchef: skill %r is loaded before the first compile, so its text "
                    "says how to reach its tools under the 'client' strategy (defer_execute); "
                    "on a provider-native strategy, compile once before load_skill",
                    name,
                )
        arguments = canonical_dumps({"name": name})
        call = ToolCall(id=_call_id(history, name), name=LOAD_SKILL, arguments=arguments)
        done = self._dispatcher.execute(call)
        if done.skill is None:
            raise UsageError(f"loading skill {shown(name)} was refused: {done.result.content}")
        if not again:
            added = (assistant("", [call]), tool_results([done.result]))
            for i, message in enumerate(added, start=len(self._state.history)):
                check_message(message, i)
            self._state.history = self._state.history + added
        return done.result

    def loaded_tools(self) -> set[str]:
        """Wire names of the tools of the loaded skills."""
        skills = self._tools.view().skills
        return {w for n in self._state.loaded_skills if n in skills for w in skills[n].tools}

    def reminder(self, kept: Sequence[Message]) -> str:
        """Text for a compaction summary: the loaded skills whose load `kept` lacks.

        Their instructions and tools, worded as a reminder, under the last compile's
        strategy; ``""`` when every loaded skill's exchange is kept.
        """
        view = self._tools.view()
        present = skill_loads(kept)
        missing = [n for n in self._state.loaded_skills if n in view.skills and n not in present]
        if not missing:
            return ""
        gate = self._dispatcher.context()
        texts = [skill_text(view, n, gate, reminder=True) for n in missing]
        return "Skills you loaded earlier stay loaded; follow their instructions.\n\n" + (
            "\n\n".join(texts)
        )
