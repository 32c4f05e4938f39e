"""contextchef: compile an agent's tools, system prompt and history into provider payloads.

Deferred tool loading keeps only tool names resident (schemas on demand through
``tool_search`` / ``defer_execute``), the prompt prefix stays byte-identical between
turns, and every tool call passes one gate under its real name.
"""

from contextchef._errors import (
    CatalogFormatError,
    ContextChefError,
    CorruptHistoryError,
    EmbeddingModelError,
    InvalidSchemaError,
    InvalidToolError,
    MalformedArgumentsError,
    MissingExtraError,
    ModelOutputError,
    NestedNamespaceError,
    NondeterminismError,
    SnapshotMismatchError,
    TemplateError,
    ToolNameConflictError,
    UnknownActionError,
    UnknownTargetError,
    UnknownToolError,
    UnknownToolkitError,
    UsageError,
)
from contextchef._json import canonical_dumps
from contextchef._tokens import estimate_tokens
from contextchef.deferred._groups import Namespace, Toolkit
from contextchef.deferred._meta import DeferredConfig
from contextchef.deferred._skills import Skill
from contextchef.dispatch._types import Allowed, CheckResult, Denied, Execution
from contextchef.exposure._policy import Exposure, ExposurePolicy
from contextchef.history._compaction import (
    clear_thinking,
    clear_tool_results,
    compact,
    cut_points,
    plan_compaction,
)
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
    PRESETS,
    Change,
    HistoryRules,
    Normalized,
    check_pairing,
    normalize,
)
from contextchef.history._offload import OffloadStore, offload_result, read_offloaded
from contextchef.providers import (
    TARGETS,
    CacheAuditFinding,
    ParsedHistory,
    from_anthropic,
    from_gemini,
    from_openai,
    from_responses,
)
from contextchef.search._rankers import RankerConfig
from contextchef.session._accounting import CacheCostModel, PlanReport
from contextchef.session._chef import CompiledRequest, ContextChef, ToolLike
from contextchef.session._memory import FileMemoryStore, InMemoryStore, MemoryStore, OverflowHandoff
from contextchef.session._pruner import CompiledGroups, Pruner, PruneResult, ResolvedAction
from contextchef.session._volatile import Announcement, CompileEvent
from contextchef.tools._catalogs import (
    Catalog,
    load_catalog,
    load_demo_catalog,
    tool_from_dict,
    tools_from_mcp,
)
from contextchef.tools._names import WIRE_NAME_RE, wire_name
from contextchef.tools._registry import Registry
from contextchef.tools._schema import to_strict_schema
from contextchef.tools._tool import CompiledTool, Tool, ToolAnnotations

__all__ = [
    "PRESETS",
    "TARGETS",
    "WIRE_NAME_RE",
    "Allowed",
    "Announcement",
    "CacheAuditFinding",
    "CacheCostModel",
    "Catalog",
    "CatalogFormatError",
    "Change",
    "CheckResult",
    "CompileEvent",
    "CompiledGroups",
    "CompiledRequest",
    "CompiledTool",
    "ContextChef",
    "ContextChefError",
    "CorruptHistoryError",
    "DeferredConfig",
    "Denied",
    "EmbeddingModelError",
    "Execution",
    "Exposure",
    "ExposurePolicy",
    "FileMemoryStore",
    "HistoryRules",
    "InMemoryStore",
    "InvalidSchemaError",
    "InvalidToolError",
    "MalformedArgumentsError",
    "MediaPart",
    "MemoryStore",
    "Message",
    "MissingExtraError",
    "ModelOutputError",
    "Namespace",
    "NestedNamespaceError",
    "NondeterminismError",
    "Normalized",
    "OffloadStore",
    "OverflowHandoff",
    "ParsedHistory",
    "Part",
    "PlanReport",
    "ProviderPart",
    "PruneResult",
    "Pruner",
    "RankerConfig",
    "ReasoningPart",
    "Registry",
    "ResolvedAction",
    "Skill",
    "SnapshotMismatchError",
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
    "assistant",
    "canonical_dumps",
    "check_pairing",
    "clear_thinking",
    "clear_tool_results",
    "compact",
    "cut_points",
    "estimate_tokens",
    "from_anthropic",
    "from_gemini",
    "from_openai",
    "from_responses",
    "load_catalog",
    "load_demo_catalog",
    "normalize",
    "offload_result",
    "plan_compaction",
    "read_offloaded",
    "to_strict_schema",
    "tool_from_dict",
    "tool_results",
    "tools_from_mcp",
    "user",
    "wire_name",
]
