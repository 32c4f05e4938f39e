"""How OpenAI bills and keeps its prompt cache, per model (Responses and Chat Completions).

Sources (read 2026-11): the prompt-caching guide
(https://developers.openai.com/api/docs/guides/prompt-caching): caching from 1,024
tokens; "For GPT-5.6 models and later model families, cache writes cost 1.25x the
uncached input token rate" (before them a write costs the input rate); lifetimes
``30m`` (default) and ``12h`` (``prompt_cache_options.ttl``, openai-python 3.60 types; some
third-party docs say ``30m`` is the only value, a CONFLICT noted in the research). The
guide gives the cached-input discount per model on the pricing page, not as one rate:
the read multiplier here is spec 002's 0.1, an assumption the cost models print.
"""

from __future__ import annotations

from contextchef._cache import lru_cache
from contextchef.providers._usage import CacheRules
from contextchef.providers.responses._cache import gpt_version

__all__ = ["openai_cache_rules"]

_SOURCE = (
    "OpenAI prompt-caching guide: from 1,024 tokens{writes}; read 0.1x assumed (spec 002: "
    "the cached-input discount is per model)"
)


@lru_cache(maxsize=256)
def openai_cache_rules(model: str, *, chat: bool = False) -> CacheRules:
    """The cache rules of `model` (see the module docstring); unknown names: pre-5.6 rules.

    Chat Completions has the ``30m`` lifetime only (its ``PromptCacheOptions.ttl``).
    Memoized (each compile asks, for `ContextChef.cache_reports`): treat it as read-only.
    """
    version = gpt_version(model)
    if version is not None and version >= (5, 6):
        lifetimes = {"30m": 30 * 60} if chat else {"30m": 30 * 60, "12h": 12 * 3600}
        return CacheRules(
            read=0.1,
            write=dict.fromkeys(lifetimes, 1.25),
            ttl="30m",
            ttl_seconds=lifetimes,
            min_tokens=1024,
            source=_SOURCE.format(writes=", writes 1.25x per TTL (GPT-5.6+), 30m by default"),
        )
    return CacheRules(
        read=0.1,
        write={"default": 1.0},
        min_tokens=1024,
        source=_SOURCE.format(writes=", writes at the input rate (before GPT-5.6)"),
    )
