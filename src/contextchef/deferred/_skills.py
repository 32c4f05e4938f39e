"""Skills: named instructions that bring their tools (deferred layer).

A **skill** bundles instructions with tools already registered in the session. Until the
skill is loaded, its tools are out of reach: they are left out of the deferred-name
directory and out of ``tool_search`` results (an exact name is answered with the skill
to load), and the gate refuses calls to them. The model loads a skill with the
``load_skill`` tool, the host with ``ContextChef.load_skill``; either way the result
text gives the instructions, then the skill's tools and how to reach them, which depends
on how the session's strategy reveals loaded tools (`SkillReveal`).

``load_skill``'s description lists the skills as ``name: description`` lines, sorted by
name, within ``DeferredConfig.skill_directory_chars``; its schema's ``name`` enum holds
every skill. Both are pure functions of the registered skills, so the tool's bytes
change only when the skills do.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contextchef._errors import UsageError, shown
from contextchef._json import JsonValue, is_unicode
from contextchef.deferred._meta import DeferredConfig, render_tool_entry
from contextchef.tools._names import WIRE_NAME_RE
from contextchef.tools._tool import Tool, ToolAnnotations

__all__ = [
    "LOAD_SKILL",
    "Skill",
    "SkillLike",
    "SkillReveal",
    "SkillStatus",
    "load_skill_tool",
    "parse_skill",
    "render_skill_directory",
    "render_skill_load",
    "reveal_sentence",
    "skill_lock_reason",
]

LOAD_SKILL = "load_skill"
"""Name of the tool the model calls to load a skill."""


@dataclass(frozen=True, kw_only=True)
class Skill:
    """Instructions plus the tools that come with them, loaded on demand.

    Attributes:
        name: The skill's name (provider-legal tool-name characters: ``[A-Za-z0-9_-]``,
            starting with a letter or ``_``, at most 64).
        description: One short line, shown in ``load_skill``'s list of skills.
        instructions: The text the model gets when the skill is loaded.
        tools: Names of tools registered in the session (own names or wire names); a
            registered skill holds their wire names.
    """

    name: str
    description: str = ""
    instructions: str = ""
    tools: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, JsonValue]:
        """The JSON form (as snapshots hold it)."""
        return {
            "name": self.name,
            "description": self.description,
            "instructions": self.instructions,
            "tools": list(self.tools),
        }


SkillLike = Skill | Mapping[str, Any]
"""A skill: the dataclass, or ``{"name", "description", "instructions", "tools": [...]}``."""

SkillReveal = Literal["available", "tool_search", "provider_search", "defer_execute"]
"""How a loaded skill's tools reach the model, which the load text says:

* ``available``: the next request reveals them (tool changes), or every schema is sent
  (``flat``): call them by name;
* ``tool_search``: our ``tool_search`` reveals them by reference, then call them by name;
* ``provider_search``: the provider's own search loads their definitions, then call them
  by name;
* ``defer_execute``: their parameters are in the text; call them through
  ``defer_execute`` (the ``client`` strategy).
"""

SkillStatus = Literal["loaded", "again", "still"]
"""What the load text opens with: a fresh load, a repeated one, or a reminder (after a
compaction removed the load from the history)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


_FIELDS = frozenset({"name", "description", "instructions", "tools"})


def parse_skill(item: object) -> Skill:
    """Check one skill input; returns a `Skill` whose ``tools`` is a tuple of names.

    Raises:
        UsageError: Not a `Skill` or mapping, a name that is not a provider-legal tool
            name, a description or instructions that are not text, or ``tools`` that is
            not a non-empty list of non-empty names (duplicates are refused too).
    """
    fields: Mapping[str, Any]
    if isinstance(item, Skill):
        fields = dataclasses.asdict(item)
    elif isinstance(item, Mapping):
        unknown = sorted(shown(k, 40) for k in item if k not in _FIELDS)
        if unknown:
            raise UsageError(f"skill {shown(item.get('name'), 80)}: unknown fields {unknown}")
        fields = item
    else:
        raise UsageError(f"a skill must be a Skill or a dict, got {type(item).__name__}")
    name, description = fields.get("name"), fields.get("description", "")
    instructions, tools = fields.get("instructions", ""), fields.get("tools")
    if not isinstance(name, str) or not WIRE_NAME_RE.match(name):
        raise UsageError(
            f"skill name {shown(name, 80)} is not a provider-legal tool name "
            f"(pattern {WIRE_NAME_RE.pattern})"
        )
    texts = (description, instructions)
    if not all(isinstance(t, str) and is_unicode(t) for t in texts):
        raise UsageError(f"skill {shown(name)}: description and instructions must be Unicode text")
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence) or not tools:
        raise UsageError(f"skill {shown(name)} needs a non-empty list of tool names in 'tools'")
    if not all(isinstance(t, str) and t for t in tools):
        raise UsageError(f"skill {shown(name)}: every entry of 'tools' must be a non-empty name")
    repeated = sorted({t for t in tools if list(tools).count(t) > 1})
    if repeated:
        raise UsageError(f"skill {shown(name)} lists the tools {repeated} more than once")
    return Skill(name=name, description=description, instructions=instructions, tools=tuple(tools))


_LOADER_INTRO = (
    "Load a skill: instructions for a kind of task, and the tools that come with them. "
    "When the task matches a skill listed below, load it before you start; the result "
    "gives the instructions to follow and makes the skill's tools available (they cannot "
    "be called or found with tool_search before). Loading a skill again repeats its "
    "instructions."
)


def render_skill_directory(skills: Sequence[Skill], config: DeferredConfig) -> str:
    """The list of skills in ``load_skill``'s description.

    Layout: ``<available_skills>``, one ``name: description`` line per skill sorted by
    name (the description on one line; just the name when it has none), then
    ``</available_skills>``. The lines share ``config.skill_directory_chars``: a skill
    whose line does not fit is left out, and a last line says how many were.
    """
    lines = ["<available_skills>"]
    used = dropped = 0
    for skill in sorted(skills, key=lambda s: s.name):
        description = _one_line(skill.description)
        line = f"{skill.name}: {description}" if description else skill.name
        if used + len(line) + 1 > config.skill_directory_chars:
            dropped += 1
            continue
        used += len(line) + 1
        lines.append(line)
    if dropped:
        lines.append(
            f"[{dropped} more skill(s) are not listed here; their names are in the enum of 'name'.]"
        )
    lines.append("</available_skills>")
    return "\n".join(lines)


def load_skill_tool(skills: Sequence[Skill], config: DeferredConfig) -> Tool:
    """The ``load_skill`` tool: the skills in its description, their names in an enum."""
    names: list[JsonValue] = sorted(s.name for s in skills)
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "enum": names,
                "description": "The exact name of a skill listed in the description.",
            }
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    return Tool(
        name=LOAD_SKILL,
        description=f"{_LOADER_INTRO}\n\n{render_skill_directory(skills, config)}",
        input_schema=schema,
        annotations=ToolAnnotations(read_only=True),
    )


def skill_lock_reason(wire: str, skills: Sequence[str]) -> str:
    """Why a tool of a skill not loaded yet cannot be called or found."""
    if len(skills) == 1:
        owner = f'skill "{skills[0]}"'
    else:
        owner = "skills " + ", ".join(f'"{s}"' for s in skills) + " (load any one)"
    call = json.dumps({"name": skills[0]}, ensure_ascii=False)
    return f'Tool "{wire}" is part of {owner}: load it with load_skill({call}) first.'


def _ending(
    tools: Sequence[tuple[str, Tool]], reveal: SkillReveal, config: DeferredConfig
) -> list[str]:
    names = [w for w, _ in tools]
    if reveal == "defer_execute":
        return [
            "Tools of this skill:",
            "",
            "\n\n".join(render_tool_entry(t, w, config) for w, t in tools),
            "",
            'Call them with defer_execute({"tool_name": "<name>", "params": {...}}).',
        ]
    return [f"Tools of this skill: {', '.join(names)}", reveal_sentence(names, reveal)]


def reveal_sentence(names: Sequence[str], reveal: SkillReveal) -> str:
    """How to reach the loaded tools `names` by name (every loader's wording).

    Not for ``defer_execute`` (the loaders word that with the tools' parameters).
    """
    if reveal == "available":
        return "These tools are now available: call them by name."
    if reveal == "tool_search":
        call = json.dumps({"tool_names": list(names)}, ensure_ascii=False)
        return f"Load them with tool_search({call}), then call them by name."
    return (
        "Find them by these exact names with your tool search to load their definitions, "
        "then call them by name."
    )


def render_skill_load(
    skill: Skill,
    tools: Sequence[tuple[str, Tool]],
    *,
    reveal: SkillReveal,
    config: DeferredConfig,
    status: SkillStatus = "loaded",
) -> str:
    """The text a skill load returns: the instructions, then its tools and how to call them.

    Args:
        skill: The skill.
        tools: (wire name, tool) of its tools the model may reach (the modes allow
            them), in the skill's order; templated descriptions already rendered.
        reveal: How those tools reach the model (see `SkillReveal`).
        config: Limits (descriptions in full parameter entries are cut to
            ``description_chars``).
        status: ``loaded``, ``again`` (it was loaded before) or ``still`` (a reminder).
    """
    head = {
        "loaded": f'Skill "{skill.name}" loaded.',
        "again": f'Skill "{skill.name}" is already loaded; its instructions again:',
        "still": f'Skill "{skill.name}":',
    }[status]
    lines = [head]
    if skill.instructions.strip():
        lines += ["", skill.instructions.strip()]
    lines.append("")
    if tools:
        lines += _ending(tools, reveal, config)
    else:
        lines.append(
            "None of this skill's tools is available now (hidden by the mode, or blocked)."
        )
    return "\n".join(lines)
