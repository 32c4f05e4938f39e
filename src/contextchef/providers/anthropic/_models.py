"""Per-model rules of Claude models: which run the prefix check, take system messages, prefill.

The model name decides (`claude_rules`); an unknown name gets the safe behaviour: no
mid-conversation system messages (their text goes into the user turn instead), prefill
left to the provider, the append-only ledger as for every model. Sources
(https://platform.claude.com/docs/en/ + path; read 2026-11):

* prefix check: ``build-with-claude/preserved-thinking/prefix-checks`` — on Fable 5.2,
  Mythos 5.2, Fable 5.1, Mythos 5.1, Opus 5.5, Sonnet 5.5 and Haiku 5.5 a thinking block
  sent back is checked against the ``system``, ``tools`` and messages before it, and any
  edit there is a 400 ("The block is bound to a different conversation") or drops the
  block; ``thinking.block_binding`` chooses, behind the
  ``thinking-binding-controls-2026-08-01`` beta;
* system messages: ``build-with-claude/mid-conversation-system-messages`` — accepted by
  Fable 5.1, Mythos 5.1, Fable 5, Mythos 5, Opus 5.5, Opus 5, Opus 4.8 and Sonnet 5.5
  (not Sonnet 5; Haiku 5.5 unconfirmed, so not used);
* tool search (``defer_loading`` honoured and revealable):
  ``agents-and-tools/tool-use/tool-search-tool`` — Fable 5, Mythos 5, Opus 5, Opus 4.5
  to 4.8, Sonnet 4.5 and 4.6, Haiku 4.5 (Sonnet 5 and the 5.5 models by the same family
  rule); Opus 4.1 and older keep a deferred tool
  hidden for good, so nothing is deferred for them;
* tool changes (``tool_addition`` / ``tool_removal`` in system messages):
  ``build-with-claude/mid-conversation-system-messages`` — Fable 5.1, Mythos 5.1, Fable 5,
  Mythos 5, Opus 5.5, Opus 5, Opus 4.8 (Sonnet 5 refuses them); definitions inside them
  (``inline-tools-2026-09-15``) on the Claude API only, so not for Bedrock
  (``anthropic.claude-…``) or Vertex (``claude-…@date``) model names;
* prompt cache (`claude_cache_rules`): ``build-with-claude/prompt-caching`` — reads 0.1x
  the input price, writes 1.25x for the 5-minute lifetime (the default) and 2x for 1 hour;
  the shortest cacheable prompt per model is a third-party table (LiteLLM docs,
  2026-10-07): 512 tokens on Opus 5, Fable 5 and Mythos 5, 1,024 on Sonnet 5, Opus 4.8 and
  Sonnet 4.x, 4,096 on Haiku 4.5 and Opus 4.5 / 4.6; 1,024 for other names;
* prefill: ``about-claude/models/whats-new-fable-5-1``, ``…/whats-new-haiku-5-5`` — a
  trailing assistant message is a 400 on Fable 5.1/5.2, Mythos 5.1/5.2, Opus 5/5.5,
  Sonnet 5.5 and Haiku 5.5, and already on Opus 4.6 and Sonnet 4.6;
* context window: 200,000 tokens on every Claude model named here (the standard window
  of Anthropic's models overview; ../shared/research/provider-context-management.md's
  Claude Code row counts from 200K too); a 1M window is an opt-in beta, not assumed;
* server-side context management (research section 2.1): ``clear_tool_uses`` and
  ``clear_thinking`` edits "available on all supported Claude models"; threshold
  compaction (``compact_20260112``) on Fable/Mythos 5.1 and 5, Opus 5.5, 5, 4.8, 4.7,
  4.6, Sonnet 5 and 4.6; on-demand compaction on those and Sonnet 5.5, Haiku 5.5, not on
  Bedrock.
"""

from __future__ import annotations

import re

from contextchef._cache import lru_cache
from contextchef.providers._base import ModelRules
from contextchef.providers._usage import CacheRules

__all__ = [
    "BINDING_BETA",
    "INLINE_TOOLS_BETA",
    "TOOL_CHANGES_BETA",
    "claude_cache_rules",
    "claude_rules",
    "claude_version",
]

BINDING_BETA = "thinking-binding-controls-2026-08-01"
"""The ``anthropic-beta`` value ``thinking.block_binding`` needs."""

INLINE_TOOLS_BETA = "inline-tools-2026-09-15"
"""Tool changes by reference and by definition (Claude API)."""

TOOL_CHANGES_BETA = "mid-conversation-tool-changes-2026-07-01"
"""Tool changes by reference only (Claude API, Bedrock, Google Cloud)."""

# family-major-minor, where minor is one or two digits (a date suffix is not a minor)
_NAME = re.compile(r"(opus|sonnet|haiku|fable|mythos)-(\d{1,2})(?:[-.](\d{1,2}))?(?![0-9])")

_PREFIX_CHECK = frozenset(
    {
        ("fable", 5, 2),
        ("mythos", 5, 2),
        ("fable", 5, 1),
        ("mythos", 5, 1),
        ("opus", 5, 5),
        ("sonnet", 5, 5),
        ("haiku", 5, 5),
    }
)
_SYSTEM_MESSAGES = frozenset(
    {
        ("fable", 5, 1),
        ("mythos", 5, 1),
        ("fable", 5, 0),
        ("mythos", 5, 0),
        ("opus", 5, 5),
        ("opus", 5, 0),
        ("opus", 4, 8),
        ("sonnet", 5, 5),
    }
)
_NO_PREFILL = frozenset(
    {
        ("fable", 5, 1),
        ("fable", 5, 2),
        ("mythos", 5, 1),
        ("mythos", 5, 2),
        ("opus", 5, 0),
        ("opus", 5, 5),
        ("sonnet", 5, 5),
        ("haiku", 5, 5),
        ("opus", 4, 6),
        ("sonnet", 4, 6),
    }
)


_THRESHOLD_COMPACTION = frozenset(
    {
        ("fable", 5, 1),
        ("mythos", 5, 1),
        ("fable", 5, 0),
        ("mythos", 5, 0),
        ("opus", 5, 5),
        ("opus", 5, 0),
        ("opus", 4, 8),
        ("opus", 4, 7),
        ("opus", 4, 6),
        ("sonnet", 5, 0),
        ("sonnet", 4, 6),
    }
)
_ON_DEMAND_COMPACTION = _THRESHOLD_COMPACTION | {("sonnet", 5, 5), ("haiku", 5, 5)}
CLAUDE_CONTEXT_WINDOW = 200_000
"""Tokens in a Claude model's standard context window (input and output)."""

_TOOL_CHANGES = _SYSTEM_MESSAGES - {("sonnet", 5, 5)}
"""Models that take tool changes: those with system messages, not Sonnet 5.5 (unconfirmed)."""


def _tool_search(family: str, major: int, minor: int) -> bool:
    """Claude 5 models, and the 4.5+ generation (Haiku from 4.5)."""
    return major >= 5 or (major == 4 and minor >= 5)


def _platform_api(model: str) -> bool:
    """The name is a Claude API name (not a Bedrock id or a Vertex ``@``-dated name)."""
    lowered = model.lower()
    return "@" not in lowered and "anthropic." not in lowered and not lowered.startswith("arn:")


def claude_version(model: str) -> tuple[str, int, int] | None:
    """(family, major, minor) of a Claude model name, or None when it names none.

    Dated, Bedrock and Vertex forms parse too: ``claude-opus-5-5-20261001``,
    ``anthropic.claude-opus-5-5-v1:0`` and ``claude-opus-5-5@20261001`` are Opus 5.5;
    ``claude-opus-4-20250514`` is Opus 4.0.
    """
    found = _NAME.search(model.lower())
    if found is None:
        return None
    family, major, minor = found.group(1), int(found.group(2)), found.group(3)
    return family, major, int(minor) if minor is not None else 0


def claude_rules(model: str) -> ModelRules:
    """The rules for `model` (see the module docstring); unknown names get the safe ones."""
    version = claude_version(model)
    if version is None:
        return ModelRules(model=model)
    changes = version in _TOOL_CHANGES
    inline = changes and _platform_api(model)
    native = {"clear_tool_uses", "clear_thinking"}
    if version in _THRESHOLD_COMPACTION:
        native.add("compact")
    if version in _ON_DEMAND_COMPACTION and not _bedrock(model):
        native.add("compact_on_demand")
    return ModelRules(
        model=model,
        known=True,
        prefix_check=version in _PREFIX_CHECK,
        system_messages=version in _SYSTEM_MESSAGES,
        prefill=version not in _NO_PREFILL,
        tool_search=_tool_search(*version),
        tool_changes=changes,
        inline_tools=inline,
        tool_change_beta=(INLINE_TOOLS_BETA if inline else TOOL_CHANGES_BETA) if changes else None,
        context_window=CLAUDE_CONTEXT_WINDOW,
        native_context=frozenset(native),
    )


def _bedrock(model: str) -> bool:
    """A Bedrock model id (``anthropic.claude-…``, a ``us.`` profile or an ARN)."""
    lowered = model.lower()
    return "anthropic." in lowered or lowered.startswith("arn:")


_MIN_CACHEABLE = {
    **dict.fromkeys((("opus", 5, 0), ("fable", 5, 0), ("mythos", 5, 0)), 512),
    **dict.fromkeys((("haiku", 4, 5), ("opus", 4, 5), ("opus", 4, 6)), 4096),
}
"""Shortest cacheable prompt, in tokens, where it is not 1,024 (see the module docstring)."""


@lru_cache(maxsize=256)
def claude_cache_rules(model: str) -> CacheRules:
    """How `model`'s prompt cache bills and expires (see the module docstring); memoized."""
    version = claude_version(model)
    return CacheRules(
        read=0.1,
        write={"5m": 1.25, "1h": 2.0},
        ttl="5m",
        ttl_seconds={"5m": 300, "1h": 3600},
        min_tokens=_MIN_CACHEABLE.get(version, 1024) if version else 1024,
        source="Anthropic prompt caching: read 0.1x, write 1.25x (5m, default) or 2x (1h); "
        "minimum cacheable prompt per model from LiteLLM's table (2026-10-07)",
    )
