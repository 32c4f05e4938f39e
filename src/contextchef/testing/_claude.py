"""Claude model names, and which preserved-thinking rules `FakeAnthropic` applies to each.

One model goes by many spellings: ``claude-opus-5-5``, with a date
(``claude-opus-5-5-20261001``), on Bedrock (``anthropic.claude-opus-5-5-v1:0``, with a
region such as ``us.`` or an inference-profile ARN before it), on Vertex AI
(``claude-opus-5-5@20261001``), behind a gateway (``anthropic/claude-opus-5-5``), and the
older order (``claude-3-5-sonnet-20241022``). `parse_claude_name` reduces each to a family
and a version; an eight-digit date is never a version (``claude-opus-4-20250514`` is
Opus 4).

`claude_model` then looks the pair up in a table of the models Anthropic's model pages and
preserved-thinking documentation name (under https://platform.claude.com/docs/en/:
``build-with-claude/preserved-thinking``, ``about-claude/models/whats-new-*``). A model that
is not in the table (``m``, ``gpt-x``, a Claude version not listed) gets none of the
model-dependent checks, so tests that use made-up names are unaffected:

* `ClaudeModel.prefix_check` (R1, R3): thinking blocks sent back must come with the
  conversation they were created in (``build-with-claude/preserved-thinking/prefix-checks``).
  The fake acts as an account created after the enforcement date, so a failed check is a
  400 on every one of these models unless ``drop_block`` is set.
* `ClaudeModel.system_messages` (R14): ``role: "system"`` entries in ``messages`` are
  accepted (``build-with-claude/mid-conversation-system-messages``); on the other listed
  models they are a 400.
* `ClaudeModel.rejects_prefill` (R18): a request ending in an assistant message is a 400
  (``about-claude/models/whats-new-fable-5-1``, Haiku 5.5 migration guide). Opus 4.6 and
  Sonnet 4.6 are included: R18 says "most 4.6+ models", and the 4.6 release notes dropped
  prefill.

* `ClaudeModel.compaction`, `ClaudeModel.compaction_on_demand`: the models
  ../shared/research/provider-context-management.md section 2.1 lists for threshold
  compaction (Fable/Mythos 5.1 and 5, Opus 5.5, 5, 4.8, 4.6, Sonnet 5 and 4.6; Opus 4.7 is
  not in this table) and on-demand compaction (those, Sonnet 5.5 and Haiku 5.5, not on
  Bedrock); on the other listed models the request is refused
  (`contextchef.testing._context`).

Doc paths are relative to https://platform.claude.com/docs/en/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = ["CLAUDE_MODELS", "ClaudeModel", "claude_model", "parse_claude_name"]

FAMILIES = ("opus", "sonnet", "haiku", "fable", "mythos")
_FAMILY = "|".join(FAMILIES)
_MINOR = r"(?:[-.](?P<minor>\d{1,2}))?"
_NEW_ORDER = re.compile(rf"claude-(?P<family>{_FAMILY})-(?P<major>\d{{1,2}}){_MINOR}")
_OLD_ORDER = re.compile(rf"claude-(?P<major>\d{{1,2}}){_MINOR}-(?P<family>{_FAMILY})")
_BEDROCK_HEAD = re.compile(r"(?:[a-z]{2,6}(?:-[a-z]+)?\.)?anthropic\.")
_BEDROCK_TAIL = re.compile(r"-v\d+(?::\d+)?$")
_DATE_TAIL = re.compile(r"-(?:\d{8}|latest)$")


@dataclass(frozen=True)
class ClaudeModel:
    """What the fake enforces for one Claude model (see the module docstring)."""

    family: str
    """``opus``, ``sonnet``, ``haiku``, ``fable`` or ``mythos``."""
    version: tuple[int, ...]
    """``(5, 5)`` for 5.5, ``(4,)`` for 4."""
    prefix_check: bool = False
    """Sent-back thinking must match the conversation it was created in (R1)."""
    system_messages: bool = False
    """``role: "system"`` entries in ``messages`` are accepted (R14)."""
    rejects_prefill: bool = False
    """A request whose last message is the assistant's is refused (R18)."""
    compaction: bool = False
    """Threshold compaction (``compact_20260112``) is accepted (compaction-threshold.md)."""
    compaction_on_demand: bool = False
    """On-demand compaction (top-level ``compaction``) is accepted (off Bedrock)."""

    @property
    def label(self) -> str:
        """The model as the docs write it, e.g. ``Opus 5.5``."""
        return f"{self.family.title()} {'.'.join(map(str, self.version))}"


def parse_claude_name(name: object) -> tuple[str, tuple[int, ...]] | None:
    """The (family, version) a Claude model name spells, or None for any other name.

    Examples: ``claude-opus-5-5-20261001`` -> ``("opus", (5, 5))``;
    ``us.anthropic.claude-sonnet-5-5-v1:0`` -> ``("sonnet", (5, 5))``;
    ``claude-3-5-sonnet-20241022`` -> ``("sonnet", (3, 5))``;
    ``claude-opus-4-20250514`` -> ``("opus", (4,))``.
    """
    if not isinstance(name, str):
        return None
    text = name.strip().lower().rpartition("/")[2]  # gateway prefix or Bedrock ARN
    text = text.partition("@")[0]  # Vertex AI version
    text = _BEDROCK_HEAD.sub("", text, count=1) if _BEDROCK_HEAD.match(text) else text
    text = _BEDROCK_TAIL.sub("", text)
    text = _DATE_TAIL.sub("", text)
    found = _NEW_ORDER.fullmatch(text) or _OLD_ORDER.fullmatch(text)
    if found is None:
        return None
    version = (
        (int(found["major"]),)
        if found["minor"] is None
        else (
            int(found["major"]),
            int(found["minor"]),
        )
    )
    return found["family"], version


def _table() -> dict[tuple[str, tuple[int, ...]], ClaudeModel]:
    plain = [
        ("opus", (3,)),
        ("sonnet", (3,)),
        ("haiku", (3,)),
        ("sonnet", (3, 5)),
        ("haiku", (3, 5)),
        ("sonnet", (3, 7)),
        ("opus", (4,)),
        ("sonnet", (4,)),
        ("opus", (4, 1)),
        ("opus", (4, 5)),
        ("sonnet", (4, 5)),
        ("haiku", (4, 5)),
        ("sonnet", (5,)),
    ]
    models = [ClaudeModel(family, version) for family, version in plain]
    models += [
        ClaudeModel("opus", (4, 6), rejects_prefill=True),
        ClaudeModel("sonnet", (4, 6), rejects_prefill=True),
        ClaudeModel("opus", (4, 8), system_messages=True),
        ClaudeModel("opus", (5,), system_messages=True, rejects_prefill=True),
        ClaudeModel("fable", (5,), system_messages=True),
        ClaudeModel("mythos", (5,), system_messages=True),
    ]
    for family in ("fable", "mythos"):
        models.append(ClaudeModel(family, (5, 1), True, True, True))
        models.append(ClaudeModel(family, (5, 2), True, False, True))
    models += [
        ClaudeModel("opus", (5, 5), True, True, True),
        ClaudeModel("sonnet", (5, 5), True, True, True),
        ClaudeModel("haiku", (5, 5), True, False, True),
    ]
    threshold = {
        ("fable", (5, 1)),
        ("mythos", (5, 1)),
        ("fable", (5,)),
        ("mythos", (5,)),
        ("opus", (5, 5)),
        ("opus", (5,)),
        ("opus", (4, 8)),
        ("opus", (4, 6)),
        ("sonnet", (5,)),
        ("sonnet", (4, 6)),
    }
    on_demand = threshold | {("sonnet", (5, 5)), ("haiku", (5, 5))}
    models = [
        replace(
            m,
            compaction=(m.family, m.version) in threshold,
            compaction_on_demand=(m.family, m.version) in on_demand,
        )
        for m in models
    ]
    return {(m.family, m.version): m for m in models}


CLAUDE_MODELS: dict[tuple[str, tuple[int, ...]], ClaudeModel] = _table()
"""The known models by (family, version); read-only by convention."""


def claude_model(name: object) -> ClaudeModel | None:
    """The table entry for a model name, or None when the name is not a known Claude model."""
    if not isinstance(name, str):
        return None
    parsed = parse_claude_name(name)
    return CLAUDE_MODELS.get(parsed) if parsed is not None else None
