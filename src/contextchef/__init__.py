"""contextchef: compile an agent's tools, system prompt and history into provider payloads.

Deferred tool loading keeps only tool names resident (schemas on demand through
``tool_search`` / ``defer_execute``), the prompt prefix stays byte-identical between
turns, and every tool call passes one gate under its real name.

Names are loaded on first use (PEP 562): ``import contextchef`` imports only the error
classes, and each other name imports its own module when first read, so a process pays
only for what it uses (benchmarks/import_time.py). Heavy dependencies (numpy, bm25s,
jsonschema, jsonschema-rs, jinja2, pydantic) are imported later still: by the first
search, argument validation, schema check or template.
"""

import typing as _typing

from contextchef._errors import (
    CatalogFormatError,
    ContextChefError,
    CorruptHistoryError,
    EmbeddingModelError,
    FrozenToolError,
    InvalidSchemaError,
    InvalidToolError,
    MalformedArgumentsError,
    McpListingTooLarge,
    McpServerError,
    MissingExtraError,
    MissingThinkingError,
    ModelOutputError,
    NestedNamespaceError,
    NondeterminismError,
    ReadOnlyPayloadError,
    SessionStoreError,
    SnapshotMismatchError,
    SnapshotSignatureError,
    StaleSessionError,
    StorageError,
    TemplateError,
    ToolNameConflictError,
    UnknownActionError,
    UnknownTargetError,
    UnknownToolError,
    UnknownToolkitError,
    UsageError,
    VolatileValueError,
)
from contextchef._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from contextchef._signing import SnapshotKeys
    from contextchef._tokens import estimate_tokens
    from contextchef.analysis._accounting import CacheCostModel, PlanReport
    from contextchef.analysis._diagnose import PrefixBreak, payload_break, prefix_break
    from contextchef.deferred._groups import Namespace, Toolkit
    from contextchef.deferred._meta import DeferredConfig
    from contextchef.deferred._skills import Skill
    from contextchef.dispatch._types import Allowed, CheckResult, Denied, Execution
    from contextchef.exposure._policy import Exposure, ExposurePolicy
    from contextchef.exposure._restore import PolicyDifference
    from contextchef.history._compaction import (
        clear_thinking,
        clear_tool_results,
        compact,
        cut_points,
        plan_compaction,
    )
    from contextchef.history._context_policy import ContextPolicy
    from contextchef.history._jsontext import canonical_dumps
    from contextchef.history._messages import (
        MediaPart,
        Message,
        Part,
        ProviderPart,
        ReasoningPart,
        TextPart,
        ToolCall,
        ToolResult,
        assistant,
        tool_results,
        user,
    )
    from contextchef.history._normalize import (
        Change,
        HistoryRules,
        Normalized,
        check_pairing,
        normalize,
    )
    from contextchef.history._offload import OffloadStore, offload_result, read_offloaded
    from contextchef.providers import (
        PRESETS,
        TARGETS,
        CacheAuditFinding,
        ParsedHistory,
        from_anthropic,
        from_gemini,
        from_openai,
        from_responses,
    )
    from contextchef.providers._base import SchemaReport
    from contextchef.providers._budget import ContextBudget, ContextUsage
    from contextchef.providers._context import NativeContext, native_context
    from contextchef.providers._usage import CacheReport
    from contextchef.search._rankers import RankerConfig
    from contextchef.search._transcript import conversation_query
    from contextchef.session._chef import ContextChef
    from contextchef.session._memory import (
        FileMemoryStore,
        InMemoryStore,
        MemoryStore,
        OverflowHandoff,
    )
    from contextchef.session._pruner import CompiledGroups, Pruner, PruneResult, ResolvedAction
    from contextchef.session._request import CompiledRequest
    from contextchef.session._toolset import ToolLike
    from contextchef.session._volatile import Announcement, CompileEvent
    from contextchef.stores._redis import RedisSessionStore
    from contextchef.stores._sqlite import SQLiteSessionStore
    from contextchef.stores._store import SessionStore, StoredSession
    from contextchef.stores._sync import SessionSync
    from contextchef.tools._catalogs import (
        Catalog,
        load_catalog,
        load_demo_catalog,
        tool_from_dict,
    )
    from contextchef.tools._lint import VolatileValue
    from contextchef.tools._mcp import McpRules, tools_from_mcp
    from contextchef.tools._names import WIRE_NAME_RE, wire_name
    from contextchef.tools._registry import Registry
    from contextchef.tools._schema import to_strict_schema
    from contextchef.tools._tool import CompiledTool, Tool, ToolAnnotations

_LAZY_EXPORTS: dict[str, tuple[str, ...]] = {
    "contextchef.analysis._diagnose": ("PrefixBreak", "payload_break", "prefix_break"),
    "contextchef.tools._lint": ("VolatileValue",),
    "contextchef.history._jsontext": ("canonical_dumps",),
    "contextchef._tokens": ("estimate_tokens",),
    "contextchef.deferred._groups": ("Namespace", "Toolkit"),
    "contextchef.deferred._meta": ("DeferredConfig",),
    "contextchef.deferred._skills": ("Skill",),
    "contextchef.dispatch._types": ("Allowed", "CheckResult", "Denied", "Execution"),
    "contextchef._signing": ("SnapshotKeys",),
    "contextchef.exposure._policy": ("Exposure", "ExposurePolicy"),
    "contextchef.exposure._restore": ("PolicyDifference",),
    "contextchef.search._rankers": ("RankerConfig",),
    "contextchef.search._transcript": ("conversation_query",),
    "contextchef.history._compaction": (
        "clear_thinking",
        "clear_tool_results",
        "compact",
        "cut_points",
        "plan_compaction",
    ),
    "contextchef.history._messages": (
        "MediaPart",
        "Message",
        "Part",
        "ProviderPart",
        "ReasoningPart",
        "TextPart",
        "ToolCall",
        "ToolResult",
        "assistant",
        "tool_results",
        "user",
    ),
    "contextchef.history._normalize": (
        "Change",
        "HistoryRules",
        "Normalized",
        "check_pairing",
        "normalize",
    ),
    "contextchef.history._offload": ("OffloadStore", "offload_result", "read_offloaded"),
    "contextchef.history._context_policy": ("ContextPolicy",),
    "contextchef.providers._base": ("SchemaReport",),
    "contextchef.providers._budget": ("ContextBudget", "ContextUsage"),
    "contextchef.providers._context": ("NativeContext", "native_context"),
    "contextchef.providers._usage": ("CacheReport",),
    "contextchef.providers": (
        "PRESETS",
        "TARGETS",
        "CacheAuditFinding",
        "ParsedHistory",
        "from_anthropic",
        "from_gemini",
        "from_openai",
        "from_responses",
    ),
    "contextchef.analysis._accounting": ("CacheCostModel", "PlanReport"),
    "contextchef.session._chef": ("ContextChef",),
    "contextchef.session._memory": (
        "FileMemoryStore",
        "InMemoryStore",
        "MemoryStore",
        "OverflowHandoff",
    ),
    "contextchef.session._pruner": ("CompiledGroups", "Pruner", "PruneResult", "ResolvedAction"),
    "contextchef.session._request": ("CompiledRequest",),
    "contextchef.session._toolset": ("ToolLike",),
    "contextchef.session._volatile": ("Announcement", "CompileEvent"),
    "contextchef.stores._store": ("SessionStore", "StoredSession"),
    "contextchef.stores._sync": ("SessionSync",),
    "contextchef.stores._redis": ("RedisSessionStore",),
    "contextchef.stores._sqlite": ("SQLiteSessionStore",),
    "contextchef.tools._catalogs": (
        "Catalog",
        "load_catalog",
        "load_demo_catalog",
        "tool_from_dict",
    ),
    "contextchef.tools._mcp": ("McpRules", "tools_from_mcp"),
    "contextchef.tools._names": ("WIRE_NAME_RE", "wire_name"),
    "contextchef.tools._registry": ("Registry",),
    "contextchef.tools._schema": ("to_strict_schema",),
    "contextchef.tools._tool": ("CompiledTool", "Tool", "ToolAnnotations"),
}
"""Module -> the public names it provides, imported on first attribute access."""

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY_EXPORTS, globals())


__all__ = [
    "PRESETS",
    "TARGETS",
    "WIRE_NAME_RE",
    "Allowed",
    "Announcement",
    "CacheAuditFinding",
    "CacheCostModel",
    "CacheReport",
    "Catalog",
    "CatalogFormatError",
    "Change",
    "CheckResult",
    "CompileEvent",
    "CompiledGroups",
    "CompiledRequest",
    "CompiledTool",
    "ContextBudget",
    "ContextChef",
    "ContextChefError",
    "ContextPolicy",
    "ContextUsage",
    "CorruptHistoryError",
    "DeferredConfig",
    "Denied",
    "EmbeddingModelError",
    "Execution",
    "Exposure",
    "ExposurePolicy",
    "FileMemoryStore",
    "FrozenToolError",
    "HistoryRules",
    "InMemoryStore",
    "InvalidSchemaError",
    "InvalidToolError",
    "MalformedArgumentsError",
    "McpListingTooLarge",
    "McpRules",
    "McpServerError",
    "MediaPart",
    "MemoryStore",
    "Message",
    "MissingExtraError",
    "MissingThinkingError",
    "ModelOutputError",
    "Namespace",
    "NativeContext",
    "NestedNamespaceError",
    "NondeterminismError",
    "Normalized",
    "OffloadStore",
    "OverflowHandoff",
    "ParsedHistory",
    "Part",
    "PlanReport",
    "PolicyDifference",
    "PrefixBreak",
    "ProviderPart",
    "PruneResult",
    "Pruner",
    "RankerConfig",
    "ReadOnlyPayloadError",
    "ReasoningPart",
    "RedisSessionStore",
    "Registry",
    "ResolvedAction",
    "SQLiteSessionStore",
    "SchemaReport",
    "SessionStore",
    "SessionStoreError",
    "SessionSync",
    "Skill",
    "SnapshotKeys",
    "SnapshotMismatchError",
    "SnapshotSignatureError",
    "StaleSessionError",
    "StorageError",
    "StoredSession",
    "TemplateError",
    "TextPart",
    "Tool",
    "ToolAnnotations",
    "ToolCall",
    "ToolLike",
    "ToolNameConflictError",
    "ToolResult",
    "Toolkit",
    "UnknownActionError",
    "UnknownTargetError",
    "UnknownToolError",
    "UnknownToolkitError",
    "UsageError",
    "VolatileValue",
    "VolatileValueError",
    "assistant",
    "canonical_dumps",
    "check_pairing",
    "clear_thinking",
    "clear_tool_results",
    "compact",
    "conversation_query",
    "cut_points",
    "estimate_tokens",
    "from_anthropic",
    "from_gemini",
    "from_openai",
    "from_responses",
    "load_catalog",
    "load_demo_catalog",
    "native_context",
    "normalize",
    "offload_result",
    "payload_break",
    "plan_compaction",
    "prefix_break",
    "read_offloaded",
    "to_strict_schema",
    "tool_from_dict",
    "tool_results",
    "tools_from_mcp",
    "user",
    "wire_name",
]
