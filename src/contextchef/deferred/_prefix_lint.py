"""The volatile-value lint of what groups, skills and servers put into the cached prefix.

`contextchef.tools._lint` reads a tool (its name, description and schema strings) and a
system prompt. Besides those, the library renders into the ``tools`` of every payload:

* a **namespace**'s name and description (the first line of its one tool; the sub-tools
  are registered tools, linted as such);
* a **skill**'s name and description (``load_skill``'s list and ``name`` enum; its
  instructions reach the model only in a tool result, which is not prefix);
* a **toolkit**'s name and description (the ``<available_toolkits>`` block the host puts
  into the system prompt; its tools are linted as tools when it is registered);
* a **server**'s name and description (the group headers of ``tool_search``'s directory).

`prefix_values` lints each of them once, when it is registered, and names it in every
`VolatileValue` it returns (``namespace 'ns' description``). The meta-tools' own text
(``tool_search``, ``defer_execute``, ``load_toolkit``, ``load_skill``) is static apart
from what is listed here, so nothing else has to be read.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable

from contextchef.deferred._groups import Namespace, Toolkit
from contextchef.deferred._skills import Skill
from contextchef.tools._lint import VolatileValue, lint_texts

__all__ = ["PrefixItem", "prefix_values"]

PrefixItem = Namespace | Toolkit | Skill | tuple[object, object]
"""A group, a skill, or ``(server, description)`` (not text: not linted)."""


def _label(item: PrefixItem) -> str:
    if isinstance(item, tuple):
        return f"server {item[0]!r}"
    kind = {Namespace: "namespace", Toolkit: "toolkit", Skill: "skill"}[type(item)]
    return f"{kind} {item.name!r}"


def prefix_values(
    items: Iterable[PrefixItem], *, today: _dt.date | None = None
) -> dict[str, tuple[VolatileValue, ...]]:
    """The volatile values of each item, by its label (``"namespace 'ns'"``; empty: none).

    Locations read ``"<label> name"`` and ``"<label> description"``.
    """
    out: dict[str, tuple[VolatileValue, ...]] = {}
    for item in items:
        name, description = item if isinstance(item, tuple) else (item.name, item.description)
        if not isinstance(name, str) or not isinstance(description, str):
            continue  # no description (a server keeps the one it had), or junk refused later
        label = _label(item)
        texts = [(f"{label} name", name), (f"{label} description", description)]
        out[label] = tuple(lint_texts(texts, today))
    return out
