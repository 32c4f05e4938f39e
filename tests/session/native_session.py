"""A long session per disclosure strategy, driven step by step through the official SDKs.

`NativeSession` runs one session of `test_native_fuzz`: the host's actions (mode switches,
runtime tools, toolkit loads, the blocklist, announcements, compaction, a snapshot
restored, a compile never sent) and the model's turns (text, resident and parallel calls,
``tool_search``, deferred tools called by name after a reveal or through
``defer_execute``, provider-side searches scripted as raw replies, calls to tools no
longer shown or blocked). Each model turn is scripted just before its request is sent,
from what that request shows the model. Every request is checked before it is sent
(`NativeSession._check_request`) and by the fake; `NativeSession.finish` checks the
whole session.

What the model is shown is read from each payload by this module alone (`shown_by`),
never from the library: the non-deferred ``tools`` entries, plus what the messages reveal
(``tool_reference`` blocks in tool results and server search results, ``tool_addition``
and ``tool_removal`` blocks in system messages, Responses ``tool_search_output`` items).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import jsonschema
import openai
from anthropic.types.beta.message_create_params import (
    MessageCreateParamsNonStreaming as BetaMessageCreateParams,
)
from google import genai
from google.genai import types as genai_types
from pydantic import TypeAdapter, ValidationError

from contextchef import (
    Allowed,
    ContextChef,
    DeferredConfig,
    InMemoryStore,
    MemoryStore,
    ToolResult,
    tool_results,
    user,
)
from contextchef.session._request import CompiledRequest
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    RawReply,
    Turn,
    httpx_for,
    provider_search,
    raw,
    text,
    tool_calls,
)
from contextchef.testing._replies import response_body
from contextchef.tools._catalogs import load_catalog
from prefix_check import prefix_problems
from sdk_check import _drain, key_problems, sdk_problems

HX = httpx_for(anthropic)
THINKING = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "error"}}
PREFIX_CHECK_MODELS = frozenset({"claude-opus-5-5"})
TOOL_CHANGE_MODELS = frozenset({"claude-opus-5-5", "claude-opus-4-8"})
META = frozenset({"tool_search", "defer_execute"})

# -- the combinations under test ------------------------------------------------------------


@dataclass(frozen=True)
class Combo:
    """One (strategy, target, model) and the strategy ``auto`` must resolve to."""

    strategy: str
    target: str
    model: str
    effective: str

    @property
    def id(self) -> str:
        return f"{self.strategy}-{self.target}-{self.model}"

    @property
    def server_search(self) -> bool:
        return self.effective in ("anthropic-native", "anthropic-native-regex", "openai-native")

    @property
    def client_search(self) -> bool:
        return self.effective in (
            "client",
            "anthropic-native-client",
            "anthropic-inline",
            "openai-native-client",
        )

    @property
    def native(self) -> bool:
        return self.effective != "client"

    @property
    def prefix_check(self) -> bool:
        return self.target == "anthropic" and self.model in PREFIX_CHECK_MODELS

    @property
    def tool_changes(self) -> bool:
        """Native on a model that takes tool changes: the tools array is never edited."""
        if self.target == "responses":
            return self.native  # additional_tools items
        return self.native and self.target == "anthropic" and self.model in TOOL_CHANGE_MODELS

    @property
    def thinking(self) -> bool:
        """Scripted turns may carry signed thinking (the 5.5 models; every other target)."""
        return self.target != "anthropic" or self.model.endswith("-5-5")


NATIVE_COMBOS = (
    Combo("anthropic-native", "anthropic", "claude-opus-5-5", "anthropic-native"),
    Combo("anthropic-native", "anthropic", "claude-sonnet-4-5", "anthropic-native"),
    Combo("anthropic-native-regex", "anthropic", "claude-opus-4-8", "anthropic-native-regex"),
    Combo("anthropic-native-client", "anthropic", "claude-opus-5-5", "anthropic-native-client"),
    Combo("anthropic-native-client", "anthropic", "claude-sonnet-4-5", "anthropic-native-client"),
    Combo("anthropic-inline", "anthropic", "claude-opus-5-5", "anthropic-inline"),
    Combo("openai-native", "responses", "gpt-5.4", "openai-native"),
    Combo("openai-native-client", "responses", "gpt-5.4", "openai-native-client"),
)
AUTO_COMBOS = (
    Combo("auto", "anthropic", "claude-opus-5-5", "anthropic-native-client"),
    Combo("auto", "anthropic", "claude-sonnet-4-5", "anthropic-native-client"),
    Combo("auto", "anthropic", "claude-opus-4-8", "anthropic-native-client"),
    Combo("auto", "responses", "gpt-5.4", "openai-native"),
)
CLIENT_COMBOS = (
    Combo("client", "anthropic", "claude-opus-5-5", "client"),
    Combo("client", "openai", "gpt-5.4", "client"),
    Combo("client", "responses", "gpt-5.4", "client"),
    Combo("client", "gemini", "gemini-2.5-pro", "client"),
    Combo("client", "deepseek", "deepseek-chat", "client"),
)
COMBOS = NATIVE_COMBOS + AUTO_COMBOS + CLIENT_COMBOS

# -- the session's tools --------------------------------------------------------------------


def _answer(**args: Any) -> str:
    return "ok: " + json.dumps(args, sort_keys=True)[:200]


def sample_args(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """The smallest arguments a JSON Schema plausibly accepts (checked by the caller)."""
    root = schema if root is None else root
    if "$ref" in schema and str(schema["$ref"]).startswith("#/"):
        target: Any = root
        for key in str(schema["$ref"])[2:].split("/"):
            target = target[key]
        return sample_args(target, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return sample_args(schema[key][0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: sample_args(props.get(k, {}), root) for k in schema.get("required", [])}
    if kind == "array":
        items = schema.get("items", {})
        return [sample_args(items, root) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return True
    return None


def valid_args(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    args = sample_args(schema)
    try:
        jsonschema.validate(args, schema)
    except (jsonschema.ValidationError, jsonschema.SchemaError):
        return None
    return args if isinstance(args, dict) else None


TOOLKITS = (
    {
        "name": "deploy",
        "description": "Deploy previews and roll back.",
        "tools": [
            {
                "name": "deploy_preview",
                "description": "Deploy a preview of a branch.",
                "input_schema": {
                    "type": "object",
                    "properties": {"branch": {"type": "string"}},
                    "required": ["branch"],
                },
            },
            {
                "name": "rollback_release",
                "description": "Roll back to an earlier release.",
                "input_schema": {
                    "type": "object",
                    "properties": {"version": {"type": "integer"}},
                    "required": ["version"],
                },
            },
        ],
    },
    {
        "name": "metrics",
        "description": "Read service metrics.",
        "tools": [
            {
                "name": "query_metrics",
                "description": "Query a metric by name.",
                "input_schema": {
                    "type": "object",
                    "properties": {"metric": {"type": "string"}},
                    "required": ["metric"],
                },
            },
            {
                "name": "list_dashboards",
                "description": "List the metric dashboards.",
                "input_schema": {"type": "object", "properties": {}},
            },
        ],
    },
)
TOOLKIT_TOOLS = {t["name"]: t for kit in TOOLKITS for t in kit["tools"]}
BLOCKABLE = ("filesystem__write_file", "github__create_issue", "github__list_issues")


@dataclass(frozen=True, repr=False)
class Catalogs:
    """The real catalogs' tools, valid arguments for each, and the read-only ones."""

    tools: tuple[Any, ...]
    args: Mapping[str, dict[str, Any]]
    """Wire name -> arguments its schema accepts."""
    review: frozenset[str]
    """Wire names the ``review`` mode keeps (read-only tools, ``tool_search``...)."""

    def __repr__(self) -> str:  # Hypothesis prints it with every failing example
        return f"Catalogs({len(self.tools)} tools)"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """What Hypothesis's printer uses: it prints a dataclass field by field (200 kB
        here, a ``HypothesisWarning`` that, as an error, hid every finding), not `repr`."""
        printer.text(repr(self))


def load_catalogs(folder: Path) -> Catalogs:
    tools: list[Any] = []
    args: dict[str, dict[str, Any]] = {}
    review = {"tool_search", "defer_execute", "load_toolkit", "read_memories"}
    review |= {"query_metrics", "list_dashboards"}
    for name in ("mcp-filesystem", "github"):
        for tool in load_catalog(folder / f"{name}.json").tools:
            tools.append(tool)
            wire = f"{tool.server}__{tool.name}"
            found = valid_args(tool.input_schema)
            if found is not None:
                args[wire] = found
            if tool.annotations is not None and tool.annotations.read_only:
                review.add(wire)
    for name, spec in TOOLKIT_TOOLS.items():
        found = valid_args(spec["input_schema"])
        assert found is not None
        args[name] = found
    return Catalogs(tools=tuple(tools), args=args, review=frozenset(review))


VARIANTS = tuple(
    base + review + require
    for base in ("defer", "all")
    for review in ("", "+review")
    for require in ("", "+require")
)
"""GitHub deferred, or everything but some filesystem pins; starting in the review mode;
with ``DeferredConfig(require_search=True)``."""


def build_chef(catalogs: Catalogs, variant: str, memory: MemoryStore | None = None) -> ContextChef:
    """The session's chef for `variant` (see `VARIANTS`)."""
    review = sorted(f"^{n}$" for n in catalogs.review)
    modes = {"review": review}
    start = "review" if "+review" in variant else None
    if variant.startswith("defer"):
        exposure: dict[str, Any] = {"defer": ["github__*"]}
    else:
        pins = ["^filesystem__read_file$", "^filesystem__list_directory$", "filesystem__write*"]
        exposure = {"default_defer": True, "pin": pins}
    store = InMemoryStore() if memory is None else memory
    config = DeferredConfig(require_search="+require" in variant)
    chef = ContextChef(**exposure, modes=modes, mode=start, memory=store, deferred=config)
    chef.register_tools(catalogs.tools, handlers={t.name: _answer for t in catalogs.tools})
    chef.register_toolkits(TOOLKITS, handlers=dict.fromkeys(TOOLKIT_TOOLS, _answer))
    chef.set_system_prompt("You are a careful engineering agent.")
    chef.set_history([user("Triage the repository and fix what you can.")])
    return chef


# -- what a payload shows the model ---------------------------------------------------------


@dataclass
class Shown:
    """What one request shows the model."""

    direct: set[str] = field(default_factory=set)
    """Tools the model may call now (definition loaded and not withdrawn)."""
    resident: set[str] = field(default_factory=set)
    """Of those, the ones declared loaded in ``tools`` (the rest were revealed)."""
    deferred: set[str] = field(default_factory=set)
    """Declared deferred tools not revealed yet (what a provider search can find)."""
    withdrawn: set[str] = field(default_factory=set)
    """Declared tools a ``tool_removal`` withdrew (the gate must refuse them)."""
    namespaces: dict[str, str] = field(default_factory=dict)
    """Responses: deferred function -> the namespace entry declaring it."""
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Responses: namespace name -> its entry; deferred flat function -> its entry."""
    tool_changes: bool = False
    """The messages carry ``tool_addition`` / ``tool_removal`` blocks."""


def _anthropic_shown(payload: Mapping[str, Any]) -> Shown:
    shown = Shown()
    for tool in payload.get("tools", []):
        if str(tool.get("type", "")).startswith("tool_search_tool_"):
            continue
        (shown.deferred if tool.get("defer_loading") else shown.direct).add(tool["name"])

    def reveal(name: str) -> None:
        shown.direct.add(name)
        shown.deferred.discard(name)
        shown.withdrawn.discard(name)

    for message in payload.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            kind = block.get("type")
            if kind == "tool_result" and isinstance(block.get("content"), list):
                for item in block["content"]:
                    if item.get("type") == "tool_reference":
                        reveal(item["tool_name"])
            elif kind == "tool_search_tool_result":
                for item in block["content"].get("tool_references", []):
                    reveal(item["tool_name"])
            elif kind == "tool_addition":
                shown.tool_changes = True
                tool = block["tool"]
                named = tool.get("name") or tool["definition"]["name"]
                reveal(named)
            elif kind == "tool_removal":  # withdrawn: neither offered nor searchable
                shown.tool_changes = True
                shown.direct.discard(block["tool"]["name"])
                shown.deferred.discard(block["tool"]["name"])
                shown.withdrawn.add(block["tool"]["name"])
    declared = {t.get("name"): t for t in payload.get("tools", [])}
    shown.resident = {
        n for n in shown.direct if n in declared and not declared[n].get("defer_loading")
    }
    return shown


def _responses_shown(payload: Mapping[str, Any]) -> Shown:
    shown = Shown()
    for tool in payload.get("tools", []):
        if tool.get("type") == "tool_search" and tool.get("execution") == "client":
            shown.direct.add("tool_search")  # our search, behind the client-executed tool
            shown.resident.add("tool_search")
        elif tool.get("type") == "function":
            if tool.get("defer_loading"):
                shown.deferred.add(tool["name"])
                shown.namespaces[tool["name"]] = tool["name"]
                shown.entries[tool["name"]] = tool
            else:
                shown.direct.add(tool["name"])
                shown.resident.add(tool["name"])
        elif tool.get("type") == "namespace":
            shown.entries[tool["name"]] = tool
            for inner in tool["tools"]:
                shown.deferred.add(inner["name"])
                shown.namespaces[inner["name"]] = tool["name"]
    for item in payload.get("input", []):
        gone = "These tools are no longer available; do not call them: "
        if item.get("role") == "developer" and gone in str(item.get("content")):
            shown.tool_changes = True  # a withdrawal, in words (the gate enforces it)
            listed = str(item["content"]).split(gone, 1)[1].rstrip(".")
            for name in listed.split(", "):
                shown.direct.discard(name)
                shown.withdrawn.add(name)
        if item.get("type") in ("tool_search_output", "additional_tools"):
            shown.tool_changes |= item["type"] == "additional_tools"
            for tool in item.get("tools", []):
                members = tool["tools"] if tool.get("type") == "namespace" else [tool]
                for inner in members:
                    name = inner["name"]
                    if item["type"] == "additional_tools":
                        shown.withdrawn.discard(name)  # offered again
                    if name not in shown.withdrawn:  # a search loading it does not
                        shown.direct.add(name)
                    shown.deferred.discard(name)
                    shown.namespaces[inner["name"]] = tool["name"]  # where it was loaded
    return shown


def shown_by(target: str, payload: Mapping[str, Any]) -> Shown:
    if target == "anthropic":
        return _anthropic_shown(payload)
    if target == "responses":
        return _responses_shown(payload)
    if target == "gemini":
        tools = payload["config"].get("tools") or []
        names = {d["name"] for t in tools for d in t.get("function_declarations") or []}
    else:
        names = {t["function"]["name"] for t in payload.get("tools", [])}
    return Shown(direct=set(names), resident=set(names))


# -- the SDKs -------------------------------------------------------------------------------

_BETA = TypeAdapter(BetaMessageCreateParams)


def beta_problems(payload: Mapping[str, Any]) -> list[str]:
    """What ``anthropic.types.beta``'s request type has against `payload`."""
    found: list[str] = []
    try:
        _drain(_BETA.validate_python(payload))
    except ValidationError as exc:
        found.append(f"$: {exc}")
    return found + key_problems(payload, BetaMessageCreateParams)


_CONVERSATION = {"anthropic": "messages", "responses": "input", "openai": "messages"}
_CHECKED_TOOLS: dict[tuple[str, str], list[str]] = {}


def _split_check(
    target: str, payload: Mapping[str, Any], check: Callable[[dict[str, Any]], list[str]]
) -> list[str]:
    """`check` of `payload`, its ``tools`` checked once per distinct array (they repeat)."""
    key = _CONVERSATION.get(target.replace("deepseek", "openai"))
    if key is None or "tools" not in payload:
        return check(dict(payload))
    tools_key = (f"{target}:{check.__name__}", json.dumps(payload["tools"], sort_keys=True))
    if tools_key not in _CHECKED_TOOLS:
        _CHECKED_TOOLS[tools_key] = check({**payload, key: []})
    without = {k: v for k, v in payload.items() if k != "tools"}
    return _CHECKED_TOOLS[tools_key] + check(without)


def sdk_findings(target: str, request: CompiledRequest, shown: Shown) -> list[str]:
    """The SDK request types' findings: the non-beta types where they apply, and beta.

    ``thinking.block_binding`` is the test's own ``extra`` field (beta only), so the
    non-beta check reads the payload without it; tool changes are beta only, so payloads
    carrying them get the beta check alone.
    """
    payload = request.payload
    if target != "anthropic":
        return _split_check(target, payload, lambda p: sdk_problems(target, p))
    found = []
    if not shown.tool_changes:
        found = _split_check(target, _without_thinking(payload), _non_beta)
    if request.headers:
        found += [f"beta: {p}" for p in _split_check(target, payload, beta_problems)]
    return found


def _non_beta(payload: dict[str, Any]) -> list[str]:
    return sdk_problems("anthropic", payload)


def _without_thinking(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != "thinking"}


class Sender:
    """One official SDK client over a fake, per target."""

    def __init__(self, target: str) -> None:
        self.target = target
        fakes: dict[str, Callable[[], FakeProvider]] = {
            "anthropic": FakeAnthropic,
            "responses": FakeResponses,
            "openai": FakeOpenAIChat,
            "deepseek": FakeOpenAIChat,
            "gemini": FakeGemini,
        }
        self.fake = fakes[target]()
        http = self.fake.http_client(HX)
        self.client: Any
        if target == "anthropic":
            self.client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)
        elif target == "gemini":
            options = genai_types.HttpOptions(httpx_client=http)
            self.client = genai.Client(api_key="x", http_options=options)
        else:
            base = "https://api.deepseek.com" if target == "deepseek" else None
            self.client = openai.OpenAI(api_key="x", max_retries=0, http_client=http, base_url=base)

    def send(self, request: CompiledRequest) -> Any:
        payload = request.payload
        if self.target == "anthropic":
            return self.client.messages.create(**payload, extra_headers=dict(request.headers))
        if self.target == "responses":
            return self.client.responses.create(**payload)
        if self.target == "gemini":
            return self.client.models.generate_content(**payload)
        return self.client.chat.completions.create(**payload)

    def close(self) -> None:
        self.client.close()


# -- one session ----------------------------------------------------------------------------

KNOWN_BUGS: dict[str, str] = {}
"""Library bugs the fuzz steps around, by id (each reproduced by the strict-xfail test
named); none is open. The stepping-around hooks stay for the next one (`_known_bug`,
``avoid``): ``readded-not-loaded`` drops ``+require`` from the variant on tool-change
models, ``responses-compaction-cut`` skips mode switches after a compaction in
Responses-native sessions. (Fixed since, their reproducers kept as regression tests:
mode-hidden deferred tools findable by the server search; Responses namespaces dropped or
kept wrongly on replay; hosted search not counting as loading; a snapshot forgetting an
edit a compile computed but nobody answered.)"""

HOST_STEPS = (
    "ask",
    "mode_review",
    "mode_all",
    "runtime",
    "toolkit",
    "block",
    "unblock",
    "announce",
    "retract",
    "compact",
    "snapshot",
    "recompile",
    "switch_model",
)
MODEL_STEPS = (
    "text",
    "resident",
    "parallel",
    "search_name",
    "search_query",
    "deferred",
    "hidden",
    "blocked",
)


@dataclass(frozen=True)
class Step:
    """One drawn step: its kind, a number picking among the candidates, thinking or not."""

    kind: str
    pick: int = 0
    thinking: bool = True


@dataclass(frozen=True)
class CallRecord:
    """One tool call the model made, and what the gate said."""

    request: int
    name: str
    exposed: bool
    expect_denied: str | None
    allowed: bool
    code: str | None


class Findings(AssertionError):
    """A check failed; the message names the combination, the request and the last steps."""


def runtime_spec(name: str) -> dict[str, Any]:
    """A tool the session writes at run time."""
    schema = {"type": "object", "properties": {"target": {"type": "string"}}}
    schema["required"] = ["target"]
    description = f"A tool written during the session ({name})."
    return {"name": name, "description": description, "input_schema": schema}


class NativeSession:
    """Runs one drawn session for `combo` and checks it (see the module docstring).

    Args:
        combo: What to compile for.
        catalogs: The tools.
        variant: One of `VARIANTS`.
        avoid: Known library bugs (`KNOWN_BUGS` keys) to step around, so the fuzz gets
            past them; each has its own strict-xfail reproducer.
    """

    def __init__(
        self,
        combo: Combo,
        catalogs: Catalogs,
        variant: str = "defer",
        avoid: frozenset[str] = frozenset(),
    ) -> None:
        if "readded-not-loaded" in avoid and combo.tool_changes:
            variant = variant.replace("+require", "")
        self.combo = combo
        self.variant = variant
        self.avoid = avoid
        self.catalogs = catalogs
        self.args: dict[str, dict[str, Any]] = dict(catalogs.args)
        self.chef = build_chef(catalogs, variant)
        for tool in self.chef.tools:  # the library's own tools (memory)
            wire = self.chef.registry.wire_name_for(tool)
            found = self.args.get(wire) or valid_args(tool.input_schema)
            if found is not None:
                self.args[wire] = found
        self.args["load_toolkit"] = {"toolkit_name": TOOLKITS[0]["name"]}
        self.sender = Sender(combo.target)
        self.requests: list[CompiledRequest] = []
        self.calls: list[CallRecord] = []
        self.mode: str | None = "review" if "+review" in variant else None
        self.blocked: set[str] = set()
        self.runtime: list[str] = []
        self.announced: list[str] = []
        self.after_compact = self.compacted = self.after_switch = False
        self.models = {combo.model}
        self.log: list[str] = [f"variant {variant}"]
        self.reply_reveals: set[str] = set()
        self._ids = itertools.count(1)

    def run(self, steps: list[Step]) -> None:
        """Every step, then the end-of-session checks; the fake's client is closed."""
        try:
            for step in steps:
                if step.kind in HOST_STEPS:
                    self.host(step)
                else:
                    self.model_turn(step)
            self.finish()
        finally:
            self.sender.close()

    # -- host ------------------------------------------------------------------------------

    def host(self, step: Step) -> None:
        chef, n = self.chef, next(self._ids)
        self.log.append(f"host {step.kind} {step.pick}")
        if step.kind == "ask":
            chef.append(user(f"Next question {n}: what else is open?"))
        elif known := self._known_bug(step):
            self.log[-1] += f" (skipped: {known})"
        elif step.kind in ("mode_review", "mode_all"):
            self.mode = "review" if step.kind == "mode_review" else None
            chef.set_mode(self.mode)
        elif step.kind == "runtime":
            name = f"runtime_tool_{n}"
            chef.register_runtime_tool(runtime_spec(name), handler=_answer)
            self.runtime.append(name)
            self.args[name] = {"target": "x"}
        elif step.kind == "toolkit":
            chef.load_toolkit(str(TOOLKITS[step.pick % len(TOOLKITS)]["name"]))
        elif step.kind == "block":
            self.blocked.add(BLOCKABLE[step.pick % len(BLOCKABLE)])
            chef.set_blocked_tools([f"^{b}$" for b in sorted(self.blocked)])
        elif step.kind == "unblock":
            self.blocked.clear()
            chef.set_blocked_tools([])
        elif step.kind == "announce":
            channel: Any = ("auto", "system", "user_tail")[step.pick % 3]
            chef.announce(f"note-{n}", f"Heads-up {n}: CI is flaky.", channel=channel)
            self.announced.append(f"note-{n}")
        elif step.kind == "retract" and self.announced:
            chef.retract_announcement(self.announced.pop(0))
        elif step.kind == "recompile":
            self._user_last()
            self.compile()  # compiled, never sent (a retry would send the next one)
        elif step.kind == "snapshot":
            self.restore()
        elif step.kind == "switch_model":
            self.switch_model(step.pick)
        elif step.kind == "compact":
            chef.compact(lambda _: "Summary: the repository was triaged.", keep_recent_turns=1)
            self.after_compact = self.compacted = True

    def restore(self) -> None:
        """Carry on in a chef built the same way, restored from this one's snapshot."""
        snapshot = json.loads(json.dumps(self.chef.snapshot()))
        other = build_chef(self.catalogs, self.variant, self.chef.memory)
        for name in self.runtime:
            other.register_runtime_tool(runtime_spec(name), handler=_answer)
        # the policy is the host's code, not the snapshot's: this host set it at run time
        other.set_mode(self.chef.base_mode.name if self.chef.base_mode else None)
        other.set_blocked_tools(self.chef.blocked_tools)
        other.restore(snapshot, allow_unsigned=True)
        self.chef = other

    def switch_model(self, pick: int) -> None:
        """Go on with another model of the same target under the same strategy (one of
        `COMBOS`): the ledger is per target, so what one model cannot take is re-rendered
        and a model with the prefix check must get no thinking bound to what changed."""
        combo = self.combo
        others = [
            c
            for c in COMBOS
            if (c.strategy, c.target) == (combo.strategy, combo.target) and c.model != combo.model
        ]
        if others:
            self.combo = others[pick % len(others)]
            self.models.add(self.combo.model)
            self.after_switch = True
            self.log[-1] += f" -> {self.combo.model}"

    def _known_bug(self, step: Step) -> str | None:
        """The known bug (`KNOWN_BUGS`) this host step would run into, if stepped around."""
        known = None
        if (
            step.kind.startswith("mode")
            and self.compacted
            and self.combo.effective == "openai-native"
        ):
            known = "responses-compaction-cut"
        return known if known in self.avoid else None

    # -- the model -------------------------------------------------------------------------

    def in_mode(self, name: str) -> bool:
        return self.mode is None or name in self.catalogs.review

    def callable(self, names: set[str]) -> list[str]:
        """Tools in `names` with known valid arguments, sorted (meta-tools left out)."""
        return sorted(n for n in names if n not in META and n in self.args)

    def turn(self, step: Step, shown: Shown) -> tuple[Turn | RawReply, str]:
        """The model's answer to a request showing `shown`, and a word on what it does."""
        combo, kind, pick = self.combo, step.kind, step.pick
        reasoning = "" if (step.thinking and combo.thinking) else None
        revealed = self.callable(shown.direct - shown.resident)
        if kind == "resident":
            names = self.callable(shown.resident)
            if names:
                name = self.choose(names, pick)
                return tool_calls((name, self.args[name]), reasoning=reasoning), name
        elif kind == "parallel":
            names = self.callable(shown.resident)
            if len(names) > 1:
                first = names[pick % len(names)]
                second = names[(pick + 1 + pick // len(names)) % len(names)]
                pair = [(first, self.args[first]), (second, self.args[second])]
                return tool_calls(*pair, reasoning=reasoning), f"{first} + {second}"
        elif kind == "blocked":
            names = [n for n in self.callable(shown.resident) + revealed if n in self.blocked]
            if not names:
                return self.turn(Step("resident", pick, step.thinking), shown)
            name = names[pick % len(names)]
            return self._direct(name, shown, reasoning), f"{name} (blocked)"
        elif kind == "hidden":
            names = self.callable(self._hidden(shown))
            if names:
                name = names[pick % len(names)]
                return tool_calls((name, self.args[name]), reasoning=reasoning), f"{name} (hidden)"
        elif kind in ("search_name", "search_query") and combo.client_search:
            pool = self.callable(self._searchable(shown))
            if pool:
                name = pool[pick % len(pool)]
                if kind == "search_name":
                    args: dict[str, Any] = {"tool_names": [name]}
                else:
                    args = {"queries": [name.replace("__", " ").replace("_", " ")]}
                turn = tool_calls(("tool_search", args), reasoning=reasoning)
                return turn, f"tool_search {args}"
        elif kind == "deferred" and revealed and combo.native:
            name = self.choose(revealed, pick)
            return self._direct(name, shown, reasoning), name
        elif kind in ("search_name", "search_query", "deferred") and combo.server_search:
            pool = self.callable(shown.deferred)
            if pool:
                name = self.choose(pool, pick)
                call = kind == "deferred"
                reply = self._server_search(name, shown, call=call, thinking=reasoning is not None)
                self.reply_reveals = {name}  # the search is part of the model's own turn
                return reply, f"server search {name}" + (" and call" if call else "")
        elif kind == "deferred" and combo.effective == "client":
            loaded = self.callable(set(self.chef.loaded_tools))
            if loaded:
                name = self.choose(loaded, pick)
                wrapped = {"tool_name": name, "params": self.args[name]}
                return tool_calls(("defer_execute", wrapped), reasoning=reasoning), name
            return self.turn(Step("search_name", pick, step.thinking), shown)
        elif kind == "deferred" and combo.client_search:
            return self.turn(Step("search_name", pick, step.thinking), shown)
        return text(f"Done ({kind} {pick}).", reasoning=reasoning), "text"

    def choose(self, names: list[str], pick: int) -> str:
        """One of `names` by `pick`; a blocked one first every fourth pick."""
        blocked = [n for n in names if n in self.blocked]
        if blocked and pick % 4 == 0:
            return blocked[pick // 4 % len(blocked)]
        return names[pick % len(names)]

    def _hidden(self, shown: Shown) -> set[str]:
        """Tools the model may name though not shown: withdrawn ones; deferred on ``client``."""
        names = set(shown.withdrawn)
        if self.combo.effective == "client":
            names |= {n for n in self.args if n.startswith("github__")} - shown.direct
        return names

    def _searchable(self, shown: Shown) -> set[str]:
        """Tools the model may look for: deferred GitHub, toolkit and runtime tools."""
        names = set(shown.deferred) | {n for n in self.args if n.startswith("github__")}
        names |= set(self.runtime) | (set(TOOLKIT_TOOLS) & set(self.chef.loaded_tools))
        return names - shown.direct

    def _direct(self, name: str, shown: Shown, reasoning: str | None) -> Turn | RawReply:
        if self.combo.target == "responses" and name in shown.namespaces:
            return self._responses(name, shown, thinking=reasoning is not None)
        return tool_calls((name, self.args[name]), reasoning=reasoning)

    def _server_search(self, name: str, shown: Shown, *, call: bool, thinking: bool) -> Turn:
        """A turn in which the provider's search finds `name` (and the model calls it)."""
        reasoning = "" if thinking else None
        then = (
            tool_calls((name, self.args[name]), reasoning=reasoning)
            if call
            else text(f"Found {name}.", reasoning=reasoning)
        )
        regex = self.combo.effective == "anthropic-native-regex"
        return provider_search(name, query=name if regex else name.replace("_", " "), then=then)

    def _responses(self, name: str, shown: Shown, *, thinking: bool) -> RawReply:
        """A Responses reply: a call in the namespace `shown` says the tool was loaded in."""
        n = next(self._ids)
        output: list[dict[str, Any]] = []
        if thinking:
            output.append(
                {
                    "type": "reasoning",
                    "id": f"rs_srv_{n:04d}",
                    "summary": [],
                    "encrypted_content": f"enc_srv_{n:04d}",
                }
            )
        output.append(
            {
                "type": "function_call",
                "id": f"fc_srv_{n:04d}",
                "call_id": f"call_srv_{n:04d}",
                "name": name,
                "namespace": shown.namespaces[name],
                "arguments": json.dumps(self.args[name]),
                "status": "completed",
            }
        )
        return raw(response_body(output, model=self.combo.model, response_id=f"resp_srv_{n:04d}"))

    # -- one request -----------------------------------------------------------------------

    def compile(self) -> CompiledRequest:
        combo = self.combo
        extra = {"thinking": THINKING} if combo.prefix_check else None
        return self.chef.compile(
            combo.target, model=combo.model, strategy=combo.strategy, extra=extra
        )

    def _user_last(self) -> None:
        """Every request ends with the user's turn: say something after a text answer."""
        if self.chef.history[-1].role == "assistant":
            self.chef.append(user(f"Go on ({len(self.requests)})."))

    def model_turn(self, step: Step) -> None:
        """Compile, script the model's answer to what this request shows, send, run calls."""
        chef = self.chef
        self._user_last()
        request = self.compile()
        index = len(self.requests)
        shown = shown_by(self.combo.target, request.payload)
        if index == 0:
            self._check_first(request)
        self._check_request(index, request, shown)
        self.reply_reveals = set()
        reply, meant = self.turn(step, shown)
        shown.direct |= self.reply_reveals
        self.log.append(f"request {index}: {step.kind} {step.pick} -> {meant}")
        fake = self.sender.fake
        fake.refuse_unrevealed = step.kind != "hidden"  # a stray call the gate must deny
        fake.script(reply)
        try:
            response = self.sender.send(request)
        except (anthropic.APIError, openai.APIError, genai.errors.APIError) as exc:
            raise Findings(self._where(index, f"refused: {exc}")) from exc
        if fake.violations:
            raise Findings(self._where(index, f"fake violations: {fake.violations}"))
        self.requests.append(request)
        self.after_compact = self.after_switch = False
        results: list[ToolResult] = []
        for call in chef.ingest(response):
            self._record(index, call, shown)
            results.append(chef.execute(call).result)
        if results:
            chef.append(tool_results(results))

    def _record(self, index: int, call: Any, shown: Shown) -> None:
        """What the gate says of `call`, and what it should say from what was shown."""
        check = self.chef.check_tool_call(call)
        name, exposed = call.name, call.name in shown.direct
        if name == "defer_execute":
            name = str(json.loads(call.arguments).get("tool_name"))
        expect = None
        if not self.in_mode(name):
            expect = "hidden by the mode"
        elif name in self.blocked:
            expect = "blocked"
        elif not exposed:
            expect = "not shown"
        elif name == "load_toolkit" and not self._kit_callable(call):
            expect = "a toolkit with no tool the model may call now"
        allowed = isinstance(check, Allowed)
        code = None if allowed else getattr(check, "code", None)
        self.calls.append(CallRecord(index, name, exposed, expect, allowed, code))

    def _kit_callable(self, call: Any) -> bool:
        """Whether the toolkit a ``load_toolkit`` call names has a tool in mode, unblocked."""
        kit = json.loads(call.arguments).get("toolkit_name")
        tools = [t["name"] for k in TOOLKITS if k["name"] == kit for t in k["tools"]]
        return any(self.in_mode(t) and t not in self.blocked for t in tools)

    def _where(self, index: int, message: str) -> str:
        steps = "\n  ".join(self.log)
        return f"{self.combo.id} request {index}: {message}\n  steps:\n  {steps}"

    def _check_first(self, request: CompiledRequest) -> None:
        """``auto`` resolved as documented; native strategies defer, ``client`` does not."""
        combo, tools = self.combo, request.payload.get("tools", [])
        if combo.target == "anthropic":
            names = {t.get("name") for t in tools}
            assert any(t.get("defer_loading") for t in tools) == combo.native, combo
            assert ("defer_execute" in names) == (combo.effective == "client"), names
            assert ("tool_search" in names) == combo.client_search, names
        if combo.target == "responses":
            assert any(t.get("type") == "tool_search" for t in tools) == combo.native, combo

    def _check_request(self, index: int, request: CompiledRequest, shown: Shown) -> None:
        """SDK types; no reported edit: append-only with the same prefix."""
        problems = sdk_findings(self.combo.target, request, shown)
        if problems:
            raise Findings(self._where(index, f"SDK request types: {problems[:3]}"))
        if self.combo.server_search and self.combo.target == "anthropic":
            # what the provider's search can still find (Responses has no withdrawal:
            # it is stated in words, and the gate refuses what a search loads anyway)
            hidden = sorted(n for n in shown.deferred if not self.in_mode(n))
            if hidden:
                raise Findings(
                    self._where(index, f"the provider's search can find {hidden[:3]}, hidden")
                )
        if not self.requests:
            return
        before = self.requests[-1]
        if request.edits == ():
            if not request.segments["messages"].startswith(before.segments["messages"][:-1]):
                raise Findings(self._where(index, "no edit reported, but sent messages changed"))
            if request.segments["system"] != before.segments["system"]:
                raise Findings(self._where(index, "no edit reported, but the system changed"))
            if request.prefix_fingerprint != before.prefix_fingerprint:
                raise Findings(self._where(index, "no edit reported, but the prefix changed"))
        elif self.combo.tool_changes and not (self.after_compact or self.after_switch):
            edits = [(e.kind, e.detail) for e in request.edits]
            raise Findings(self._where(index, f"an edit on a tool-change model: {edits}"))

    # -- after the session -----------------------------------------------------------------

    def finish(self) -> None:
        """The prefix checker; the gate against what was shown; the mode's denials."""
        combo, fake = self.combo, self.sender.fake
        log = "\n  ".join(self.log)
        if self.models & PREFIX_CHECK_MODELS and combo.target == "anthropic":
            exchanges = [(r.body, r.reply) for r in fake.requests]
            found = prefix_problems(exchanges, models=PREFIX_CHECK_MODELS)
            if found:
                raise Findings(f"{combo.id}: prefix checker: {found[:3]}\n  {log}")
        for call in self.calls:
            where = f"{combo.id} request {call.request}: {call.name!r}"
            if call.allowed and call.expect_denied:
                raise Findings(f"{where} allowed, though {call.expect_denied}\n  {log}")
            if not call.allowed and call.expect_denied is None:
                raise Findings(f"{where} denied ({call.code}), though shown\n  {log}")
        self.chef.set_mode("review")
        for tool in self.chef.tools:
            wire = self.chef.registry.wire_name_for(tool)
            if wire in self.catalogs.review:
                continue
            check = self.chef.check_tool_call({"id": "x", "name": wire, "arguments": {}})
            if isinstance(check, Allowed):
                raise Findings(f"{combo.id}: {wire} is hidden by the mode, yet allowed")
