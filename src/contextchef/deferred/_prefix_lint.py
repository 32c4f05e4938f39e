"""The volatile-value lint of what groups, skills and servers put into the cached prefix.

`contextchef.tools._lint` reads a tool (its name, description and schema strings) and a
system prompt. Besides those, the library renders into the ``tools`` of every payload:

* a **namespace**'s name and description (the first line of its one tool; the sub-tools
  are registered tools, linted as such);
* a **skill**'s name and description (``load_skill``'s list and ``name`` enum; its
  instructions reach the model only in a tool result, which is not prefix);
* a **toolkit**'s name and description (the ``<available_toolkits>`` block the host puts
  into the system prompt; its tools are linted as tools when it is registered);
* a **server**'s name (in its tools' wire names) and description (the group headers of
  ``tool_search``'s directory);
* a templated tool description as **rendered** with the session's ``template_vars`` and
  ``template_fragments`` (`Rendered`; its source is not what the model reads), named with
  the variable or fragment that carried the value.

`prefix_values` lints each of them once, when it is registered, and names it in every
`VolatileValue` it returns (``namespace 'ns' description``). The meta-tools' own text
(``tool_search``, ``defer_execute``, ``load_toolkit``, ``load_skill``) is static apart
from what is listed here, so nothing else has to be read.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from contextchef.deferred._groups import Namespace, Toolkit
from contextchef.deferred._skills import Skill
from contextchef.tools._lint import VolatileValue, lint_texts, rendered_values

__all__ = ["PrefixItem", "Rendered", "prefix_values"]


@dataclass(frozen=True)
class Rendered:
    """A templated tool description as rendered for a session, with what it could read.

    Attributes:
        tool: The tool's own name.
        text: The rendered description (what the model reads).
        variables: The session's ``template_vars``.
        fragments: The session's ``template_fragments``.
    """

    tool: str
    text: str
    variables: Mapping[str, object]
    fragments: Mapping[str, str]


PrefixItem = Namespace | Toolkit | Skill | Rendered | tuple[object, object]
"""A group, a skill, a rendered description, ``(server, None)`` (its name) or
``(server, description)``."""


_KINDS = {Namespace: "namespace", Toolkit: "toolkit", Skill: "skill"}


def prefix_values(
    items: Iterable[PrefixItem], *, today: _dt.date | None = None
) -> dict[str, tuple[VolatileValue, ...]]:
    """The volatile values of each item by key (empty: none found).

    A group or skill is keyed by its label (``"namespace 'ns'"``) and read as
    ``"<label> name"`` and ``"<label> description"``; a server, ``(name, None)`` or
    ``(name, description)``, is keyed and read as ``"server 'x' name"`` or
    ``"server 'x' description"``; a `Rendered` description is keyed
    ``"tool 'x' rendered description"`` (see `rendered_values`).
    """
    out: dict[str, tuple[VolatileValue, ...]] = {}
    for item in items:
        if isinstance(item, Rendered):
            sources = {f"template_vars[{k!r}]": v for k, v in item.variables.items()}
            sources |= {f"template_fragments[{k!r}]": v for k, v in item.fragments.items()}
            found = rendered_values(item.tool, item.text, sources, today)
            out[f"tool {item.tool!r} rendered description"] = tuple(found)
        elif not isinstance(item, tuple):
            label = f"{_KINDS[type(item)]} {item.name!r}"
            texts = [(f"{label} name", item.name), (f"{label} description", item.description)]
            out[label] = tuple(lint_texts(texts, today))
        elif isinstance(item[0], str) and isinstance(item[1], str | None):  # else: refused later
            # a server: its name (with its tools) or its description (when it is set)
            where = f"server {item[0]!r} {'name' if item[1] is None else 'description'}"
            out[where] = tuple(
                lint_texts([(where, item[0] if item[1] is None else item[1])], today)
            )
    return out
