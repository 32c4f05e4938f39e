"""Provider request rules: small named checks, grouped per wire API into tuples.

Each rule is a `Check`: ``rule(body, earlier)`` yields a message per problem in a request's
JSON body, naming the offending location (``messages[2].content[0]``). The fakes run their
tuple on every request and answer a provider-shaped HTTP 400 naming each broken rule.
Rules never raise on a malformed body: a wrong type is either reported or skipped.

The rules are the ones that make real providers answer 400 in an agent loop (pairing of
calls and results, role order, tool names), as documented by each provider:

* Anthropic Messages: https://docs.anthropic.com/en/api/messages and
  https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use;
* OpenAI Chat Completions: https://platform.openai.com/docs/guides/function-calling;
* OpenAI Responses: https://platform.openai.com/docs/api-reference/responses/create;
* Gemini: https://ai.google.dev/gemini-api/docs/function-calling.

Some rules are stricter than the live APIs, on purpose. Gemini merges consecutive
same-role turns, and recorded Anthropic traffic shows repeated ``tool_use`` ids accepted.
contextchef's normalizer guarantees these, so the fakes hold it to them (``rules=``
relaxes them). Anthropic's turn rules merge consecutive same-role messages first, as the
API does (`contextchef.testing._anthropic_turns`); content part types and blank text are
`contextchef.testing._content_rules`. One rule is not on by default because production accepts what
it refuses: `anthropic_tool_use_declared` (a ``tool_use`` in the history naming a tool not
in ``tools`` is accepted: recorded traffic, and Anthropic documents that a withdrawn tool
can still be called); names a ``tool_reference`` points at, however, must be declared
(`anthropic_references_declared`; the API answers ``tool_reference_unresolved``).

Anthropic's preserved-thinking rules (the prefix check on thinking blocks sent back,
``thinking.block_binding``, mid-conversation system messages, prefill) live in
`contextchef.testing._binding` and `contextchef.testing._placement` and are part of
`ANTHROPIC_RULES`; they word their refusals as the API does (`provider_worded`) and read
the request's ``anthropic-beta`` header through a keyword-only ``headers`` parameter.

Add a rule by appending a function to a tuple: ``FakeAnthropic(rules=(*ANTHROPIC_RULES,
my_rule))``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.history._call_names import GEMINI_NAME, OPENAI_NAME
from contextchef.testing import _name_rules as _call_names
from contextchef.testing._anthropic_turns import (
    anthropic_roles_alternate,
    anthropic_tool_result_has_call,
    anthropic_tool_results_first,
    anthropic_tool_use_answered,
)
from contextchef.testing._beta_fields import anthropic_beta_fields, anthropic_file_sources
from contextchef.testing._binding import anthropic_block_binding, anthropic_thinking_prefix
from contextchef.testing._body import as_list as _list
from contextchef.testing._body import blocks as _blocks
from contextchef.testing._body import dicts as _dicts
from contextchef.testing._body import hashable as _hashable
from contextchef.testing._calls import (
    anthropic_thinking_leads_tool_turn,
    chat_call_ids_in_range,
    chat_tool_calls_answered,
    chat_tool_calls_well_formed,
    chat_tool_message_has_call,
    responses_call_ids_in_range,
    responses_function_call_answered,
    responses_item_ids_unique,
    responses_output_has_call,
)
from contextchef.testing._choice_rules import (
    anthropic_thinking_choice_not_forced,
    anthropic_tool_choice_declared,
    chat_tool_choice_declared,
    gemini_tool_choice_declared,
    responses_tool_choice_declared,
)
from contextchef.testing._content_rules import (
    anthropic_text_blocks_non_blank,
    chat_content_part_types,
    responses_content_part_types,
)
from contextchef.testing._context import (
    anthropic_compaction_blocks_known,
    anthropic_compaction_closed_turn,
    anthropic_context_management_valid,
)
from contextchef.testing._media_limits import (
    anthropic_media_limits,
    gemini_media_limits,
    openai_image_limits,
)
from contextchef.testing._media_rules import (
    anthropic_media_types,
    chat_media_types,
    chat_model_media,
    gemini_function_response_media,
    responses_media_types,
)
from contextchef.testing._native import ANTHROPIC_NATIVE_RULES, RESPONSES_NATIVE_RULES
from contextchef.testing._openai_cache import CHAT_CACHE_RULES, RESPONSES_CACHE_RULES
from contextchef.testing._part_rules import (
    anthropic_base64_valid,
    anthropic_property_keys_valid,
    gemini_function_names_present,
)
from contextchef.testing._placement import (
    anthropic_no_prefill,
    anthropic_system_message_fields,
    anthropic_system_message_placement,
)
from contextchef.testing._reasoning_items import responses_reasoning_followed
from contextchef.testing._records import Check, RecordedRequest
from contextchef.testing._responses_context import (
    responses_compaction_items_known,
    responses_context_management_valid,
)
from contextchef.testing._search_items import responses_search_items_valid

__all__ = [
    "ANTHROPIC_RULES",
    "CHAT_RULES",
    "GEMINI_RULES",
    "RESPONSES_RULES",
    "anthropic_base64_valid",
    "anthropic_block_binding",
    "anthropic_compaction_blocks_known",
    "anthropic_compaction_closed_turn",
    "anthropic_context_management_valid",
    "anthropic_no_prefill",
    "anthropic_no_trailing_whitespace",
    "anthropic_property_keys_valid",
    "anthropic_references_declared",
    "anthropic_required_fields",
    "anthropic_roles_alternate",
    "anthropic_system_message_fields",
    "anthropic_system_message_placement",
    "anthropic_thinking_leads_tool_turn",
    "anthropic_thinking_prefix",
    "anthropic_tool_names_valid",
    "anthropic_tool_result_has_call",
    "anthropic_tool_results_first",
    "anthropic_tool_use_answered",
    "anthropic_tool_use_declared",
    "anthropic_tool_use_ids_unique",
    "chat_call_ids_in_range",
    "chat_function_names_valid",
    "chat_parameters_object",
    "chat_required_fields",
    "chat_tool_calls_answered",
    "chat_tool_calls_well_formed",
    "chat_tool_message_has_call",
    "gemini_declaration_names_valid",
    "gemini_ends_with_user",
    "gemini_function_calls_answered",
    "gemini_function_names_present",
    "gemini_function_responses_have_calls",
    "gemini_required_fields",
    "gemini_roles_alternate",
    "responses_call_ids_in_range",
    "responses_compaction_items_known",
    "responses_context_management_valid",
    "responses_function_call_answered",
    "responses_function_names_valid",
    "responses_item_ids_unique",
    "responses_output_has_call",
    "responses_reasoning_followed",
    "responses_required_fields",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]

TOOL_NAME = OPENAI_NAME  # declared tool names: Anthropic takes the same ones


# -- reading a body without trusting it ---------------------------------------------------


def _missing(body: _Body, *keys: str) -> Iterator[str]:
    if "model" in keys and not (isinstance(body.get("model"), str) and body["model"]):
        yield "model: required, a non-empty string"
    if "messages" in keys and not (isinstance(body.get("messages"), list) and body["messages"]):
        yield "messages: required, a non-empty list"


def _names(
    where: str, names: Sequence[tuple[str, object]], pattern: re.Pattern[str]
) -> Iterator[str]:
    """Illegal and duplicate names among (location, name) pairs."""
    first: dict[str, str] = {}
    for at, name in names:
        if not isinstance(name, str) or not pattern.fullmatch(name):
            yield f"{at}: {where} name {name!r} does not match ^{pattern.pattern}$"
        elif name in first:
            yield f"{at}: {where} name {name!r} is already used by {first[name]} (must be unique)"
        else:
            first[name] = at


# -- Anthropic Messages ------------------------------------------------------------------


def _typed(message: Mapping[str, Any], kind: str) -> list[tuple[int, dict[str, Any]]]:
    return [(j, b) for j, b in _blocks(message) if b.get("type") == kind]


def _use_ids(message: Mapping[str, Any]) -> list[object]:
    if message.get("role") != "assistant":
        return []
    return [_hashable(b.get("id")) for _, b in _typed(message, "tool_use")]


def anthropic_required_fields(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``model``, ``max_tokens`` (a positive integer) and a non-empty ``messages``."""
    yield from _missing(body, "model")
    limit = body.get("max_tokens")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        yield f"max_tokens: required, a positive integer (got {limit!r})"
    yield from _missing(body, "messages")


def anthropic_tool_use_ids_unique(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """No two ``tool_use`` blocks share an id."""
    first: dict[object, int] = {}
    for i, message in _dicts(body.get("messages")):
        for call_id in _use_ids(message):
            if call_id in first:
                yield (
                    f"messages[{i}]: tool_use id {call_id!r} was already used in "
                    f"messages[{first[call_id]}]; tool_use ids must be unique"
                )
            else:
                first[call_id] = i


_ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")


def anthropic_tool_use_ids_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``tool_use.id`` and ``tool_result.tool_use_id`` match ``^[a-zA-Z0-9_-]+$``."""
    for i, message in _dicts(body.get("messages")):
        for j, block in _blocks(message):
            key = {"tool_use": "id", "tool_result": "tool_use_id"}.get(str(block.get("type")))
            value = block.get(key) if key else None
            if key and not (isinstance(value, str) and _ANTHROPIC_ID.fullmatch(value)):
                yield (
                    f"messages.{i}.content.{j}.{key}: String should match pattern "
                    f"'^[a-zA-Z0-9_-]+$' (got {value!r:.60})"
                )


def anthropic_tool_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Tool names are unique and legal; custom tools have an object ``input_schema``."""
    tools = _dicts(body.get("tools"))
    yield from _names("tool", [(f"tools[{j}]", t.get("name")) for j, t in tools], TOOL_NAME)
    for j, tool in tools:
        if tool.get("type", "custom") not in (None, "custom"):
            continue  # a server tool: no input_schema
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            yield f"tools[{j}]: input_schema must be a JSON Schema object with type 'object'"


def anthropic_references_declared(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Every ``tool_reference`` in the history names a tool in ``tools``.

    References appear in ``tool_search_tool_result`` blocks and in ``tool_result`` content
    (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool).
    """
    declared = {t.get("name") for _, t in _dicts(body.get("tools"))}
    for i, message in _dicts(body.get("messages")):
        for j, block in _dicts(message.get("content")):
            for name in _reference_names(block):
                if name not in declared:
                    yield (
                        f"messages[{i}].content[{j}]: tool_reference names {name!r}, which is "
                        "not in tools (tool_reference_unresolved)"
                    )


def _reference_names(block: Mapping[str, Any]) -> Iterator[Any]:
    content = block.get("content")
    if isinstance(content, dict):  # tool_search_tool_result
        content = content.get("tool_references")
    for item in content if isinstance(content, list) else ():
        if isinstance(item, dict) and item.get("type") == "tool_reference":
            yield item.get("tool_name", item.get("name"))


def anthropic_tool_use_declared(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Every ``tool_use`` in the history names a tool in ``tools`` (opt-in: see above)."""
    declared = {t.get("name") for _, t in _dicts(body.get("tools"))}
    for i, message in _dicts(body.get("messages")):
        if message.get("role") != "assistant":
            continue
        for j, block in _typed(message, "tool_use"):
            if block.get("name") not in declared:
                yield (
                    f"messages[{i}].content[{j}]: tool_use names {block.get('name')!r}, "
                    "which is not in tools"
                )


def anthropic_no_trailing_whitespace(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A final assistant message (a prefill) does not end with whitespace text."""
    messages = _list(body.get("messages"))
    last = messages[-1] if messages else None
    if not isinstance(last, dict) or last.get("role") != "assistant" or not _blocks(last):
        return
    i, blocks = len(messages) - 1, _blocks(last)
    j, block = blocks[-1]
    content = block.get("text")
    if block.get("type") == "text" and isinstance(content, str) and content != content.rstrip():
        yield (
            f"messages[{i}].content[{j}]: final assistant content cannot end with "
            "trailing whitespace"
        )


ANTHROPIC_RULES: tuple[Check, ...] = (
    anthropic_required_fields,
    anthropic_roles_alternate,
    anthropic_tool_use_answered,
    anthropic_tool_result_has_call,
    anthropic_tool_results_first,
    anthropic_tool_use_ids_unique,
    anthropic_tool_use_ids_valid,
    anthropic_tool_names_valid,
    _call_names.anthropic_call_names_valid,
    anthropic_property_keys_valid,
    anthropic_references_declared,
    anthropic_tool_choice_declared,
    anthropic_thinking_choice_not_forced,
    anthropic_no_trailing_whitespace,
    anthropic_text_blocks_non_blank,
    anthropic_base64_valid,
    anthropic_media_types,
    anthropic_media_limits,
    anthropic_file_sources,
    anthropic_block_binding,
    anthropic_system_message_fields,
    anthropic_system_message_placement,
    anthropic_no_prefill,
    anthropic_thinking_prefix,
    anthropic_thinking_leads_tool_turn,
    *ANTHROPIC_NATIVE_RULES,
    anthropic_context_management_valid,
    anthropic_beta_fields,
    anthropic_compaction_closed_turn,
    anthropic_compaction_blocks_known,
)
"""The rules `FakeAnthropic` enforces by default. The six before the tool-deferral rules
(`contextchef.testing._native`) are the thinking and system-message rules
(`contextchef.testing._binding`, `contextchef.testing._placement`, and a final tool turn
led by its thinking when thinking is on); the model-dependent
ones apply only to the Claude models of `contextchef.testing._claude` (and, for tool search,
those Anthropic's tool search page lists), so made-up model names skip them. The last four
are context management, beta-only fields (`contextchef.testing._beta_fields`) and
compaction (`contextchef.testing._context`)."""


# -- OpenAI Chat Completions -------------------------------------------------------------


def chat_required_fields(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``model`` and a non-empty ``messages``."""
    yield from _missing(body, "model", "messages")


def _chat_functions(body: _Body) -> list[tuple[int, dict[str, Any]]]:
    return [
        (j, tool["function"])
        for j, tool in _dicts(body.get("tools"))
        if tool.get("type", "function") == "function" and isinstance(tool.get("function"), dict)
    ]


def chat_function_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Function names are unique and legal."""
    named = [(f"tools[{j}].function", f.get("name")) for j, f in _chat_functions(body)]
    yield from _names("function", named, TOOL_NAME)


def chat_parameters_object(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``tools[].function.parameters``, when given, is an object schema."""
    for j, function in _chat_functions(body):
        params = function.get("parameters")
        if params is not None and not (isinstance(params, dict) and params.get("type") == "object"):
            yield (
                f"tools[{j}].function.parameters: invalid schema for function "
                f"{function.get('name')!r}: must be a JSON Schema of type 'object'"
            )


CHAT_RULES: tuple[Check, ...] = (
    chat_required_fields,
    chat_tool_calls_answered,
    chat_tool_calls_well_formed,
    chat_tool_message_has_call,
    chat_call_ids_in_range,
    chat_function_names_valid,
    _call_names.chat_call_names_valid,
    chat_parameters_object,
    chat_tool_choice_declared,
    chat_content_part_types,
    chat_media_types,
    chat_model_media,
    openai_image_limits,
    *CHAT_CACHE_RULES,
)
"""The rules `FakeOpenAIChat` enforces by default (DeepSeek too)."""


# -- OpenAI Responses --------------------------------------------------------------------


def responses_required_fields(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``model``; ``max_output_tokens``, when given, an integer of 16 or more.

    The API: "Invalid 'max_output_tokens': integer below minimum value. Expected a value
    >= 16" (``integer_below_min_value``; public report earendil-works/pi#6265).
    """
    yield from _missing(body, "model")
    cap = body.get("max_output_tokens")
    if cap is not None and (type(cap) is not int or cap < 16):
        yield f"max_output_tokens is {cap!r}: integer below minimum value, expected >= 16"


def responses_function_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Function tool names are unique and legal."""
    named = [
        (f"tools[{j}]", t.get("name"))
        for j, t in _dicts(body.get("tools"))
        if t.get("type") == "function"
    ]
    yield from _names("function", named, TOOL_NAME)


RESPONSES_RULES: tuple[Check, ...] = (
    responses_required_fields,
    responses_function_call_answered,
    responses_output_has_call,
    responses_reasoning_followed,
    responses_call_ids_in_range,
    responses_item_ids_unique,
    responses_function_names_valid,
    responses_tool_choice_declared,
    _call_names.responses_call_names_valid,
    responses_content_part_types,
    responses_media_types,
    openai_image_limits,
    responses_search_items_valid,
    *RESPONSES_NATIVE_RULES,
    *RESPONSES_CACHE_RULES,
    responses_context_management_valid,
    responses_compaction_items_known,
)
"""The rules `FakeResponses` enforces by default (the last two: server-side compaction,
`contextchef.testing._responses_context`)."""


# -- Gemini (REST bodies: camelCase; snake_case accepted too) ---------------------------


def _key(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    return obj.get(camel, obj.get(snake))


def _role(content: Mapping[str, Any]) -> object:
    return content.get("role") or "user"


def _parts(content: Mapping[str, Any], camel: str, snake: str) -> list[dict[str, Any]]:
    """The ``functionCall`` / ``functionResponse`` objects of a content's parts."""
    found = (_key(p, camel, snake) for _, p in _dicts(content.get("parts")))
    return [f for f in found if isinstance(f, dict)]


def _calls(content: Mapping[str, Any]) -> list[dict[str, Any]]:
    return _parts(content, "functionCall", "function_call") if _role(content) == "model" else []


def _responses(content: Mapping[str, Any]) -> list[dict[str, Any]]:
    return _parts(content, "functionResponse", "function_response")


def gemini_required_fields(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A non-empty ``contents``."""
    if not (isinstance(body.get("contents"), list) and body["contents"]):
        yield "contents: required, a non-empty list"


def gemini_roles_alternate(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Content roles alternate user/model, starting with user (no role means user)."""
    expected = "user"
    for i, content in _dicts(body.get("contents")):
        role = _role(content)
        if role not in ("user", "model"):
            yield f"contents[{i}]: role {role!r} is not 'user' or 'model'"
            return
        if role != expected:
            yield (
                f"contents[{i}]: role {role!r} where {expected!r} was expected; contents "
                "must alternate user/model, starting with user"
            )
            return
        expected = "model" if role == "user" else "user"


def gemini_ends_with_user(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """The last content is the user's (a function response is one): no trailing model turn.

    The API's 400: "Please ensure that multiturn requests ends with a user role or a
    function response" ("single turn requests end with a user role or the role field is
    empty" for one content).
    """
    contents = [c for _, c in _dicts(body.get("contents"))]
    if contents and _role(contents[-1]) == "model":
        yield (
            f"contents[{len(contents) - 1}]: role 'model' ends the request; multiturn "
            "requests must end with a user role or a function response"
        )


def gemini_function_calls_answered(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A model turn's ``functionCall`` parts are answered in the next user turn.

    As many ``functionResponse`` parts as calls, with the same names, and the same ids
    where the calls have ids: google-genai's ``FunctionCall.id``, "If populated, the client
    [is] to execute the ``function_call`` and return the response with the matching
    ``id``" (a response without one does not answer it). A call without an id (Gemini
    2.x) is answered by name.
    """
    contents = _list(body.get("contents"))
    for i, content in _dicts(contents):
        calls = _calls(content)
        if not calls:
            continue
        following = contents[i + 1] if i + 1 < len(contents) else None
        answers = (
            _responses(following)
            if isinstance(following, dict) and _role(following) == "user"
            else []
        )
        where = f"contents[{i + 1}]" if following is not None else "no next content"
        if len(answers) != len(calls):
            yield (
                f"contents[{i}]: {len(calls)} functionCall part(s) but {len(answers)} "
                f"functionResponse part(s) in the next user turn ({where}); the number of "
                "function response parts must equal the number of function call parts"
            )
            continue
        names = sorted(str(c.get("name")) for c in calls)
        if names != sorted(str(a.get("name")) for a in answers):
            yield f"contents[{i}]: the functionResponse names in {where} do not match {names}"
        answered_ids = {a.get("id") for a in answers}
        unanswered = [c["id"] for c in calls if c.get("id") not in (None, *answered_ids)]
        if unanswered:
            yield f"contents[{i}]: functionCall ids {unanswered} get no functionResponse in {where}"


def gemini_function_responses_have_calls(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A user turn with ``functionResponse`` parts follows a model turn with calls."""
    contents = _list(body.get("contents"))
    for i, content in _dicts(contents):
        if not _responses(content) or _role(content) != "user":
            continue
        previous = contents[i - 1] if i > 0 else None
        if not (isinstance(previous, dict) and _calls(previous)):
            yield (
                f"contents[{i}]: functionResponse parts must come right after a model turn "
                "with functionCall parts"
            )


def gemini_declaration_names_valid(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Function declaration names are unique (across all tools) and legal."""
    named = []
    for t, tool in _dicts(body.get("tools")):
        declarations = _key(tool, "functionDeclarations", "function_declarations")
        for d, declaration in _dicts(declarations):
            named.append((f"tools[{t}].functionDeclarations[{d}]", declaration.get("name")))
    yield from _names("function declaration", named, GEMINI_NAME)


GEMINI_RULES: tuple[Check, ...] = (
    gemini_required_fields,
    gemini_roles_alternate,
    gemini_ends_with_user,
    gemini_function_calls_answered,
    gemini_function_responses_have_calls,
    gemini_declaration_names_valid,
    gemini_tool_choice_declared,
    gemini_function_names_present,
    gemini_function_response_media,
    gemini_media_limits,
    _call_names.gemini_call_names_valid,
)
"""The rules `FakeGemini` enforces by default."""
