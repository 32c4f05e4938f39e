"""The fake of Gemini's Interactions API (``client.interactions.create``), and its rules.

`FakeGeminiInteractions` answers ``POST /{version}/interactions`` (``v1``, what
google-genai 3.6.1 sends by default, or ``v1beta``) behind the official SDK client
(``genai.Client(api_key="x", http_options=types.HttpOptions(httpx_client=
fake.http_client(hx)))``). A scripted turn comes back as an ``Interaction``: a ``thought``
step carrying a signature (and the reasoning as its ``summary``) when the turn has
reasoning, or calls on Gemini 3 and later (which return a signature with every answer
that calls a function: https://ai.google.dev/gemini-api/docs/thought-signatures; on this
API it is a ``thought`` step's), a ``model_output`` step for the text, one
``function_call`` step per call (``id`` ``call_0001``...); ``status``
``requires_action`` when it calls tools, else ``completed``; ``usage`` zeros; ids
``v1_0001``...

The rules, from google-genai 3.6.1's request types and Google's Interactions pages (see
``shared/research/gemini-interactions.md`` for each source):

* `interactions_required_fields`: ``model`` (a string) and a non-empty ``input``;
* `interactions_fields_known`: none of ``generateContent``'s fields (``contents``,
  ``config``, ``tool_config``, ``systemInstruction``...): the SDK has no ``tool_config``
  (it raises ``TypeError``) and the API is snake_case;
* `interactions_system_instruction_string`: ``system_instruction`` is a plain string;
* `interactions_tools_flat`: each tool is a flat entry with a ``type``; a ``function``
  has a ``name`` (unique) and an object ``parameters`` (JSON Schema; no
  ``function_declarations`` / ``parameters_json_schema``);
* `interactions_input_homogeneous`: a list ``input`` is all steps or all content blocks
  (the SDK refuses a mixed list), and every step has a ``type``;
* `interactions_results_paired`: each ``function_result`` names, by ``call_id``, a
  ``function_call`` made before it and not answered yet ("must match the ID from the
  function call block"); every call is answered before the next ``user_input`` (assumed:
  whether the server refuses an unanswered call is not documented);
* `interactions_signatures_replayed`: a ``thought`` step sent back carries a signature
  this fake issued, unchanged ("include thought blocks with their signatures"), or one of
  the placeholders Google documents for calls the model did not make (`PLACEHOLDERS`),
  and the thought the fake sent with a call is sent back with it while that call is in
  the current turn (after the last ``user_input``);
* `interactions_calls_signed`: on a model that validates thought signatures (Gemini 3
  and later: "When using Gemini 3 models, you must pass back thought
  signatures during function calling, or you will get a validation error",
  https://ai.google.dev/gemini-api/docs/thought-signatures; only the current turn is
  validated), each answer of the current turn the request sends (the model's steps in a
  row after the last ``user_input``) that holds a ``function_call`` carries a
  ``signature`` on one of its steps (a ``thought`` step's, research §2.2);
* `interactions_store_chaining`: ``previous_interaction_id`` names an interaction this
  fake returned to a request without ``store: false`` (nothing is kept to chain to
  otherwise), and is not combined with ``store: false`` (which disables it);
* `interactions_chain_new_steps_only`: a chained request's ``input`` holds only new
  steps (the server holds the chain's inputs and outputs, the research's §1.3): none
  the chain holds already (the same step, or a call id or thought signature it holds),
  which the model would see twice;
* `interactions_config_resent`: a chained request sends again the ``system_instruction``,
  ``tools`` and ``generation_config`` of the request it chains to (they are
  interaction-scoped; ``previous_interaction_id`` carries the history only, §1.3);
* `interactions_continuation`: a ``continuation_token`` is one a reply of this fake
  issued (``status: requires_continuation``) and the latest of its decode (not used by an
  accepted request already); with ``store`` the request names the interaction that
  issued it as ``previous_interaction_id`` and sends no ``input`` (the server rebuilds
  the context from it); with ``store: false`` it sends the original ``input`` again,
  unchanged, and the token's decode was not stored either (google-genai 3.6.1
  ``_interactions_continuation._continuation_body`` and ``Interaction.continuation_token``:
  "pass the latest token back unchanged"; research §1.2).

With ``decode_cap=N`` a scripted turn of more than N steps stops after N with ``status:
requires_continuation`` and a ``continuation_token``; each request resuming it (accepted
by the rules, no scripted turn used) answers the next N steps, as a new interaction, until
the turn's own status. The SDK's default automatic continuation does exactly that and
merges the hops into one ``Interaction``.

Pairing is checked over the whole conversation: the chained interactions' steps (their
inputs and outputs, as this fake kept them) and then the request's ``input``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from contextchef import UsageError
from contextchef.testing._body import dicts
from contextchef.testing._choice_rules import interactions_tool_choice_declared
from contextchef.testing._fake import RECORDED_HEADERS, FakeProvider
from contextchef.testing._media_rules import interactions_result_media
from contextchef.testing._name_rules import interactions_names_valid
from contextchef.testing._records import Check, RecordedRequest
from contextchef.testing._replies import Ids, gemini_error
from contextchef.testing._script import Turn
from contextchef.testing._search import no_provider_search
from contextchef.testing._signing import FAKE_SIGNING_KEY, opened, seal

__all__ = [
    "INTERACTIONS_RULES",
    "PLACEHOLDERS",
    "FakeGeminiInteractions",
    "interactions_calls_signed",
    "interactions_chain_new_steps_only",
    "interactions_config_resent",
    "interactions_continuation",
    "interactions_fields_known",
    "interactions_input_homogeneous",
    "interactions_reply",
    "interactions_required_fields",
    "interactions_results_paired",
    "interactions_signatures_replayed",
    "interactions_store_chaining",
    "interactions_system_instruction_string",
    "interactions_tool_choice_declared",
    "interactions_tools_flat",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]
CONTENT_TYPES = frozenset({"text", "image", "audio", "video", "document"})
"""Content block types (``Content``); everything else with a ``type`` is a step."""
_FOREIGN = (
    "contents",
    "config",
    "tool_config",
    "toolConfig",
    "systemInstruction",
    "generationConfig",
    "thinking_budget",
    "include_thoughts",
)


_GEMINI = re.compile(r"(?:^|/)gemini-(\d+)(?:[.-]|$)", re.IGNORECASE)
"""A Gemini model name and its major version (3 and later validate thought signatures)."""


def validates(model: object) -> bool:
    """Whether `model` is Gemini 3 or later (1.x / 2.x do not validate; another name: unknown)."""
    named = _GEMINI.search(model) if isinstance(model, str) else None
    return named is not None and int(named[1]) >= 3


def interactions_reply(turn: Turn, model: str, ids: Ids) -> dict[str, Any]:
    """An ``Interaction`` for `turn` (the model's steps only, as ``create`` returns)."""
    steps: list[dict[str, Any]] = []
    call_ids = [ids.take("call_") for _ in turn.calls]
    if turn.reasoning is not None or (turn.calls and validates(model)):  # sealed with its calls
        sealed = seal(ids.take("sig_"), "", {"calls": call_ids} if call_ids else None)
        signature = base64.b64encode(sealed.encode("ascii")).decode("ascii")
        thought: dict[str, Any] = {"type": "thought", "signature": signature}
        if turn.reasoning:
            thought["summary"] = [{"type": "text", "text": turn.reasoning}]
        steps.append(thought)
    if turn.text:
        steps.append({"type": "model_output", "content": [{"type": "text", "text": turn.text}]})
    for call, call_id in zip(turn.calls, call_ids, strict=True):
        step = {"type": "function_call", "id": call_id, "name": call.name}
        steps.append({**step, "arguments": dict(call.arguments)})
    usage = {"total_input_tokens": 0, "total_cached_tokens": 0, "total_output_tokens": 0}
    return {
        "id": ids.take("v1_"),
        "status": "requires_action" if turn.calls else "completed",
        "model": model,
        "steps": steps,
        "usage": {**usage, "total_tokens": 0},
    }


def _steps(body: _Body) -> list[tuple[int, dict[str, Any]]]:
    value = body.get("input")
    return list(dicts(value)) if isinstance(value, list) else []


def interactions_required_fields(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``model`` (a string) and ``input`` (a string or a non-empty list).

    A stored continuation (``continuation_token`` without ``store: false``) has no
    ``input`` (`interactions_continuation`).
    """
    if not isinstance(body.get("model"), str):
        yield "model: required, a string"
    if "continuation_token" in body and body.get("store") is not False:
        return
    value = body.get("input")
    if not (isinstance(value, str) or (isinstance(value, list) and value)):
        yield "input: required, a string or a non-empty list of steps"


def interactions_fields_known(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """No ``generateContent`` field (the Interactions body is snake_case, without them)."""
    for key in _FOREIGN:
        if key in body:
            yield f"{key}: not a field of an interaction (a generateContent field?)"


def interactions_system_instruction_string(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``system_instruction`` is a string, not a ``Content`` object."""
    if "system_instruction" in body and not isinstance(body["system_instruction"], str):
        yield "system_instruction: must be a string"


def interactions_tools_flat(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Flat typed tools; function names unique, ``parameters`` an object."""
    seen: set[str] = set()
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        yield "tools: must be a list"
        return
    for t, tool in dicts(tools):
        if not isinstance(tool.get("type"), str):
            yield f"tools[{t}]: needs a 'type' (function, google_search, tool_search...)"
        elif tool["type"] == "function":
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                yield f"tools[{t}]: a function needs a 'name'"
            elif name in seen:
                yield f"tools[{t}]: duplicate function name {name!r}"
            else:
                seen.add(name)
            if "parameters" in tool and not isinstance(tool["parameters"], dict):
                yield f"tools[{t}].parameters: must be a JSON Schema object"
            for key in ("function_declarations", "parameters_json_schema"):
                if key in tool:
                    yield f"tools[{t}]: {key!r} is a generateContent field"


def interactions_input_homogeneous(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A list ``input`` holds only steps or only content blocks, each with a ``type``."""
    value = body.get("input")
    if not isinstance(value, list):
        return
    kinds = set()
    for i, item in enumerate(value):
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str):
            yield f"input[{i}]: needs a string 'type'"
            return
        kinds.add("content" if kind in CONTENT_TYPES else "step")
    if len(kinds) > 1:
        yield "input: mixes content blocks and steps; send a list of steps only"


def _chained(body: _Body, earlier: _Earlier) -> RecordedRequest | None:
    """The stored request whose interaction `body` chains to (None: not chained)."""
    previous = body.get("previous_interaction_id")
    if not isinstance(previous, str):
        return None
    for request in earlier:
        if request.status == 200 and request.reply.get("id") == previous:
            return request
    return None


def _held(body: _Body, earlier: _Earlier) -> list[dict[str, Any]]:
    """Every step the server holds for `body`'s chain: inputs and outputs, oldest first."""
    chain: list[RecordedRequest] = []
    request = _chained(body, earlier)
    while request is not None and len(chain) < len(earlier):
        chain.append(request)
        request = _chained(request.body, earlier)
    held: list[dict[str, Any]] = []
    for request in reversed(chain):
        held += [s for _, s in _steps(request.body)]
        held += [s for s in request.reply.get("steps") or () if isinstance(s, dict)]
    return held


def interactions_results_paired(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each ``function_result`` answers, by ``call_id``, one open ``function_call``."""
    open_calls: dict[str, int] = {}
    answered: set[str] = set()
    held = [(-1, step) for step in _held(body, earlier)]
    for i, step in [*held, *_steps(body)]:
        kind = step.get("type")
        if kind == "function_call":
            open_calls[str(step.get("id"))] = i
        elif kind == "function_result":
            call_id = step.get("call_id")
            if not isinstance(call_id, str) or call_id not in open_calls:
                where = "answered already" if call_id in answered else "made before it"
                yield f"input[{i}]: function_result call_id {call_id!r} matches no call {where}"
                continue
            del open_calls[call_id]
            answered.add(call_id)
        elif kind == "user_input" and open_calls:
            yield f"input[{i}]: function_call(s) {sorted(open_calls)} have no function_result"
            return


def _issued(earlier: _Earlier) -> tuple[set[str], dict[str, str]]:
    """Signatures this fake sent, and the signature sent with each call."""
    signatures: set[str] = set()
    with_call: dict[str, str] = {}
    for request in earlier:
        steps = request.reply.get("steps") if request.status == 200 else None
        signature = None
        for step in steps if isinstance(steps, list) else ():
            if step.get("type") == "thought":
                signature = step.get("signature")
                signatures.add(str(signature))
            elif step.get("type") == "function_call" and signature is not None:
                with_call[str(step.get("id"))] = str(signature)
    return signatures, with_call


def _opened(signature: object) -> dict[str, Any] | None:
    """The claims of a thought signature a fake with the same key sealed, else None."""
    try:
        return opened(base64.b64decode(str(signature), validate=True).decode("ascii"), "")
    except ValueError:  # not base64, or not ASCII: made up
        return None


PLACEHOLDERS = frozenset(
    {"skip_thought_signature_validator", "context_engineering_is_the_way_to_go"}
)
"""The thought signatures Gemini takes for calls the model did not make ("transfer a
conversation trace from another model, or inject custom function calls",
https://ai.google.dev/gemini-api/docs/thought-signatures)."""


def interactions_calls_signed(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Each answer of the current turn that holds a call is signed (Gemini 3 and later)."""
    model = body.get("model")
    if not isinstance(model, str) or not validates(model):
        return
    steps = _steps(body)
    last_user = max(
        (n for n, (_, s) in enumerate(steps) if s.get("type") == "user_input"), default=-1
    )
    answer: list[tuple[int, dict[str, Any]]] = []
    for i, step in [*steps[last_user + 1 :], (-1, {"type": "user_input"})]:
        if step.get("type") not in ("user_input", "function_result"):
            answer.append((i, step))
            continue
        call = next(((j, s) for j, s in answer if s.get("type") == "function_call"), None)
        if call is not None and not any(isinstance(s.get("signature"), str) for _, s in answer):
            yield (
                f"input[{call[0]}]: function_call {call[1].get('id')!r} is in the current "
                f"turn without a thought signature; model {model[:60]!r} validates them "
                "(send the thought step that came with it)"
            )
        answer = []


def interactions_signatures_replayed(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Thought steps come back with the signature issued, unchanged, before their calls."""
    signatures, with_call = _issued(earlier)
    signatures |= PLACEHOLDERS
    steps = _steps(body)
    last_user = max((i for i, s in steps if s.get("type") == "user_input"), default=-1)
    sent: set[str] = set()
    for i, step in steps:
        if step.get("type") == "thought":
            signature = step.get("signature")
            claims = None if signature in signatures else _opened(signature)
            if signature not in signatures and claims is None:
                yield f"input[{i}]: thought signature {str(signature)[:40]!r} was not issued"
            sent.add(str(signature))
        elif step.get("type") == "function_call" and i > last_user:
            wanted = with_call.get(str(step.get("id")))
            if wanted is not None and wanted not in sent:
                yield (
                    f"input[{i}]: function_call {step.get('id')!r} of the current turn is "
                    "sent without the thought step (and signature) that came with it"
                )


def interactions_store_chaining(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """``previous_interaction_id``: an interaction returned before, and ``store`` not false."""
    previous = body.get("previous_interaction_id")
    if previous is None:
        return
    if body.get("store") is False:
        yield "previous_interaction_id cannot be used with store: false"
    known = {r.reply.get("id") for r in earlier if r.status == 200}
    stored = {
        r.reply.get("id") for r in earlier if r.status == 200 and r.body.get("store") is not False
    }
    if previous not in known:
        yield f"previous_interaction_id {str(previous)[:80]!r} names no stored interaction"
    elif previous not in stored:  # store: false kept nothing server-side to chain to
        yield f"previous_interaction_id {str(previous)[:80]!r} was created with store: false"


def _marks(step: Mapping[str, Any]) -> set[str]:
    """What identifies a step the model made anywhere: its call id, its signature."""
    marks = set()
    if step.get("type") == "function_call" and step.get("id"):
        marks.add(f"call:{step['id']}")
    if step.get("signature") and step["signature"] not in PLACEHOLDERS:  # one per call made
        marks.add(f"signature:{step['signature']}")
    return marks


def _overlap(held: list[dict[str, Any]], steps: list[dict[str, Any]]) -> int:
    """How many leading `steps` repeat the chain's steps, JSON for JSON.

    The chain's whole start (the conversation sent again) or its last steps (the turn
    before sent again). Steps with no id, such as a model's text, are told apart this
    way only: two equal answers ("Done.") in two turns are two steps. A run counts only
    when it holds a step of the model's.
    """
    old = [json.dumps(s, sort_keys=True) for s in held]
    new = [json.dumps(s, sort_keys=True) for s in steps]
    for k in range(min(len(old), len(new)), 0, -1):
        if (new[:k] == old[:k] or new[:k] == old[len(old) - k :]) and any(
            s.get("type") not in ("user_input", "function_result") for s in steps[:k]
        ):  # a user saying the same again is a new step; the model's turn sent again is not
            return k
    return 0


def interactions_chain_new_steps_only(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A chained ``input`` holds no step the chain holds already."""
    if _chained(body, earlier) is None:
        return
    chain = _held(body, earlier)
    held = {m for step in chain for m in _marks(step)}
    steps = _steps(body)
    repeated = _overlap(chain, [step for _, step in steps])
    for n, (i, step) in enumerate(steps):
        if step.get("type") in ("user_input", "function_result") and n >= repeated:
            continue
        if n < repeated or _marks(step) & held:
            yield (
                f"input[{i}]: a {step.get('type')!r} step the chained interaction holds "
                "already (previous_interaction_id carries the conversation): send only "
                "the steps after it"
            )


def interactions_config_resent(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """The chained-to request's interaction-scoped fields are sent again."""
    chained = _chained(body, earlier)
    if chained is None:
        return
    for key in ("system_instruction", "tools", "generation_config"):
        if key in chained.body and key not in body:
            yield (
                f"{key}: sent with interaction {body['previous_interaction_id']!r} but not "
                "with this request chained to it; it is interaction-scoped (not carried by "
                "previous_interaction_id): send it on every request"
            )


def _issuer(token: object, earlier: _Earlier) -> RecordedRequest | None:
    """The accepted request whose reply issued `token`."""
    for request in earlier:
        if request.status == 200 and request.reply.get("continuation_token") == token:
            return request
    return None


def _original(request: RecordedRequest, earlier: _Earlier) -> RecordedRequest:
    """The request that started the decode `request` (a continuation, or not) belongs to."""
    for _ in range(len(earlier)):
        token = request.body.get("continuation_token")
        issuer = _issuer(token, earlier) if token is not None else None
        if issuer is None:
            break
        request = issuer
    return request


def interactions_continuation(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """A ``continuation_token``: issued, the latest, and sent as the SDK sends it."""
    token = body.get("continuation_token")
    if token is None:
        return
    issuer = _issuer(token, earlier)
    if issuer is None:
        yield (
            f"continuation_token {str(token)[:60]!r} was not issued by a reply "
            "(status requires_continuation) of this API"
        )
        return
    used = [
        r.index for r in earlier if r.status == 200 and r.body.get("continuation_token") == token
    ]
    if used:
        yield (
            f"continuation_token {str(token)[:60]!r} is stale: request {used[0]} resumed it "
            "already; pass the latest token back"
        )
    issued_by, stored = issuer.reply.get("id"), issuer.body.get("store") is not False
    if (body.get("store") is not False) is not stored:
        yield (
            f"store: the decode continuation_token resumes was created with store "
            f"{str(stored).lower()}; resume it the same way"
        )
    elif stored and body.get("previous_interaction_id") != issued_by:
        yield (
            f"previous_interaction_id {str(body.get('previous_interaction_id'))[:60]!r}: a "
            f"stored continuation names the interaction that issued continuation_token "
            f"({issued_by!r})"
        )
    elif stored and "input" in body:
        yield (
            "input: a stored continuation sends no input (the server rebuilds the context "
            f"from interaction {issued_by!r})"
        )
    elif not stored and body.get("input") != _original(issuer, earlier).body.get("input"):
        yield (
            "input: a continuation with store: false sends the original input again, "
            f"unchanged (request {_original(issuer, earlier).index}'s)"
        )


INTERACTIONS_RULES: tuple[Check, ...] = (
    interactions_required_fields,
    interactions_fields_known,
    interactions_system_instruction_string,
    interactions_tools_flat,
    interactions_names_valid,
    interactions_tool_choice_declared,
    interactions_input_homogeneous,
    interactions_results_paired,
    interactions_result_media,
    interactions_signatures_replayed,
    interactions_calls_signed,
    interactions_store_chaining,
    interactions_chain_new_steps_only,
    interactions_config_resent,
    interactions_continuation,
)
"""The rules `FakeGeminiInteractions` enforces by default."""


class FakeGeminiInteractions(FakeProvider):
    """Gemini Interactions (google-genai ``Client().interactions``), `INTERACTIONS_RULES`.

    Args:
        decode_cap: Most steps one reply holds; a longer scripted turn stops with
            ``requires_continuation`` (see the module docstring). None: no cap.
        rules: As for `FakeProvider`.
        record_headers: As for `FakeProvider`.
        ids: As for `FakeProvider`.

    Raises:
        UsageError: `decode_cap` is not a positive integer or None.
    """

    wire = "gemini-interactions"
    endpoint = "/v1/interactions"
    default_rules: ClassVar[tuple[Check, ...]] = INTERACTIONS_RULES
    _suffix = "/interactions"

    def __init__(
        self,
        *,
        decode_cap: int | None = None,
        rules: Iterable[Check] | None = None,
        record_headers: Iterable[str] = RECORDED_HEADERS,
        ids: Ids | None = None,
        signing_key: bytes = FAKE_SIGNING_KEY,
    ) -> None:
        super().__init__(
            rules=rules, record_headers=record_headers, ids=ids, signing_key=signing_key
        )
        if decode_cap is not None and (
            isinstance(decode_cap, bool) or not isinstance(decode_cap, int) or decode_cap < 1
        ):
            raise UsageError(f"decode_cap must be a positive integer or None, got {decode_cap!r}")
        self._cap = decode_cap
        self._rest: dict[str, tuple[list[dict[str, Any]], str, str]] = {}

    def _reply(self, turn: Turn, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
        no_provider_search(turn, "Gemini Interactions")
        return self._capped(interactions_reply(turn, model, self._ids))

    def _unscripted(self, path: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """A request resuming a capped reply: the turn's next steps (no scripted turn)."""
        token = body.get("continuation_token")
        if not isinstance(token, str) or token not in self._rest:
            return None
        steps, status, model = self._rest.pop(token)
        usage = {"total_input_tokens": 0, "total_cached_tokens": 0, "total_output_tokens": 0}
        reply = {"id": self._ids.take("v1_"), "status": status, "model": model, "steps": steps}
        return self._capped({**reply, "usage": {**usage, "total_tokens": 0}})

    def _capped(self, reply: dict[str, Any]) -> dict[str, Any]:
        """`reply` cut at `decode_cap` steps, the rest kept under a new token."""
        steps = reply["steps"]
        if self._cap is None or len(steps) <= self._cap:
            return reply
        token = self._ids.take("cont_")
        self._rest[token] = (steps[self._cap :], reply["status"], reply["model"])
        cut = {**reply, "status": "requires_continuation", "steps": steps[: self._cap]}
        return {**cut, "continuation_token": token}

    def _error(self, status: int, message: str) -> dict[str, Any]:
        return gemini_error(status, message)
