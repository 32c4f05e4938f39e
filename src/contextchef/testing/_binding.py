"""Preserved thinking: the prefix check on thinking blocks sent back, and its control.

Rule ids (R1...) are this fake's numbering of the rules in Anthropic's preserved-thinking
documentation; doc paths are under https://platform.claude.com/docs/en/ (mainly
``build-with-claude/preserved-thinking/prefix-checks`` and
``build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation``).

On the models that run the check (`ClaudeModel.prefix_check`, R1) a ``thinking`` or
``redacted_thinking`` block in ``messages`` is valid only with the conversation it was
created in. The fake finds the block among its own earlier 200 replies (by ``signature``;
redacted blocks by ``data``) and rebuilds the prefix it was produced after (R6): that
request's top-level ``system``, its ``tools`` and its ``messages``, then the reply's blocks
before it. The new request must carry the same, by value (R8: key order and whitespace
between JSON tokens do not matter, nor how a number is written, ``1e+20`` or
``100000000000000000000``, ``-0.0`` or ``0``: `by_value`; any changed value, added or
dropped field, or reordered block does; a string ``content`` and the same text as a
one-block list differ, which R8 leaves unverified), with these allowances:

* ``cache_control`` keys are ignored everywhere (R7);
* ``tools`` are compared as a set, leaving out tools with ``defer_loading: true`` that no
  ``tool_reference`` in the prefix names yet (R6, R7);
* thinking blocks are compared on their own (R11): those sent before the block must be the
  last ones of those it was produced after. So the oldest ones may be removed, the newest
  ones, or all of them; removing one between others (a gap) or putting back a removed one
  fails the blocks after it.

A block whose signature this fake never produced, or whose content differs from what the
fake produced, is a tampered signature: a 400 whatever the settings (R4). The fake's
signatures are sealed (`sign_thinking`, `contextchef.testing._signing`): a block another
fake with the same key produced, in another process say, is checked from the digests of
its prefix the signature carries, with the same verdicts (R22 excepted), as the API
checks signatures without server state. A prefix
mismatch is a 400 naming the first failing block (R3, R4), unless the request sets
``thinking.block_binding.prefix_mismatch_behavior`` to ``"drop_block"`` (R2, R5): then
that block and every later thinking block are dropped and, with the
``thinking-binding-controls-2026-08-01`` beta, listed in the reply's
``input_transformations`` (R28). Without `anthropic_thinking_prefix` among the fake's rules
(an account the check is not enforced on, R3), failing blocks are listed as
``thinking_mismatch_allowed`` instead.

With a ``compaction`` block in ``messages`` the prefix starts at the newest one (R6, R21):
what comes before it is neither checked nor part of any prefix, and a block produced in a
reply after a compaction block has that block as its prefix's start. A block produced
before an on-demand compaction (R22) passes when the kept turns directly follow the
summarized messages unchanged, under the compaction request's ``system`` and tools (the
other R22 conditions, such as every compaction having run on a preserved-thinking model,
are not checked). Not modelled: model binding (R25), account binding (R26), ``fallback``
blocks (R12), fetched URL bytes (R8).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextchef.testing._body import (
    NO_HEADERS,
    as_list,
    betas,
    by_value,
    dicts,
    without_cache_control,
)
from contextchef.testing._claude import claude_model
from contextchef.testing._context import compaction_start, from_compaction
from contextchef.testing._records import RecordedRequest, provider_worded
from contextchef.testing._signing import digest, digests, opened, seal, unpacked

__all__ = [
    "THINKING_BETA",
    "BlockFailure",
    "ThinkingVerdict",
    "anthropic_block_binding",
    "anthropic_thinking_prefix",
    "input_transformations",
    "judge_thinking",
    "sign_thinking",
]

THINKING_BETA = "thinking-binding-controls-2026-08-01"
"""The ``anthropic-beta`` value that enables ``thinking.block_binding`` (R2)."""
_THINKING = ("thinking", "redacted_thinking")
_TAMPERED = "tampered"


@dataclass(frozen=True)
class BlockFailure:
    """A thinking block of a request that fails the check on its own."""

    message: int
    """Index in ``messages``."""
    block: int
    """Index in that message's ``content``."""
    kind: str
    """``thinking`` or ``redacted_thinking``."""
    reason: str
    """``tampered``, ``system``, ``tools``, ``thinking`` (a gap or a block put back) or
    ``messages.<k>`` (the first message that differs)."""

    @property
    def path(self) -> str:
        """``messages.<i>.content.<j>``, as the API writes it."""
        return f"messages.{self.message}.content.{self.block}"


@dataclass(frozen=True)
class ThinkingVerdict:
    """What the API does with a request's thinking blocks."""

    failures: tuple[BlockFailure, ...] = ()
    """Every block failing on its own, in request order."""
    refused: BlockFailure | None = None
    """The block a 400 names; None when the request goes through."""
    dropped: tuple[str, ...] = ()
    """Paths of the blocks removed under ``drop_block`` (the first failing one onwards)."""


@dataclass(frozen=True)
class _Origin:
    request: RecordedRequest
    position: int
    block: dict[str, Any]


def _key(block: Mapping[str, Any]) -> tuple[str, str] | None:
    kind = block.get("type")
    value = block.get("signature" if kind == "thinking" else "data")
    if kind in _THINKING and isinstance(value, str) and value:
        return str(kind), value
    return None


def _origins(earlier: Sequence[RecordedRequest]) -> dict[tuple[str, str], _Origin]:
    """Every thinking block this fake sent in a 200 reply, by signature (or data)."""
    found: dict[tuple[str, str], _Origin] = {}
    for request in earlier:
        if request.status != 200 or not isinstance(request.body, dict):
            continue
        for position, block in dicts(request.reply.get("content")):
            key = _key(block)
            if key is not None and key not in found:
                found[key] = _Origin(request, position, block)
    return found


def _same(a: Any, b: Any) -> bool:
    return by_value(without_cache_control(a)) == by_value(without_cache_control(b))


def _is_thinking(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") in _THINKING


def _plain(message: object) -> str:
    """A message without its thinking blocks (compared on their own) and cache markers."""
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        message = {**message, "content": [b for b in message["content"] if not _is_thinking(b)]}
    return by_value(without_cache_control(message))


def _thinking_of(content: Sequence[Any]) -> list[str]:
    return [by_value(without_cache_control(b)) for b in content if _is_thinking(b)]


def _referenced(value: Any, names: set[str]) -> set[str]:
    """Tool names a ``tool_reference`` anywhere in `value` points at (added to `names`)."""
    if isinstance(value, dict):
        if value.get("type") == "tool_reference":
            name = value.get("name", value.get("tool_name"))
            if isinstance(name, str):
                names.add(name)
        for item in value.values():
            _referenced(item, names)
    elif isinstance(value, list):
        for item in value:
            _referenced(item, names)
    return names


@dataclass(frozen=True)
class _Prompt:
    """A request's prompt read once: canonical texts, and a hash chain over its messages."""

    system: str
    tools: tuple[tuple[object, bool, str], ...]  # (name, deferred, canonical text)
    messages: tuple[str, ...]  # each message without thinking blocks, canonical
    chain: tuple[bytes, ...]  # chain[k]: digest of messages[:k]
    thinking: tuple[str, ...]  # every thinking block, canonical, in order
    referenced: frozenset[str]  # tool names referenced anywhere in messages
    opened: tuple[str, ...] = ()  # the first message after the block opening it (R22)

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> _Prompt:
        messages = from_compaction(body.get("messages"))  # R6: the prefix starts there
        keys = tuple(_plain(m) for m in messages)
        chain = [b""]
        for key in keys:
            chain.append(hashlib.blake2b(chain[-1] + key.encode(), digest_size=16).digest())
        tools = tuple(
            (t.get("name"), t.get("defer_loading") is True, by_value(without_cache_control(t)))
            for _, t in dicts(body.get("tools"))
        )
        thinking = [t for _, m in dicts(messages) for t in _thinking_of(as_list(m.get("content")))]
        first = messages[0] if messages and isinstance(messages[0], dict) else {}
        rest = as_list(first.get("content"))[1:]
        return cls(
            system=by_value(without_cache_control(body.get("system"))),
            tools=tools,
            messages=keys,
            chain=tuple(chain),
            thinking=tuple(thinking),
            referenced=frozenset(_referenced(messages, set())),
            opened=(_plain({**first, "content": rest}),) if rest else (),
        )

    def tool_set(self, referenced: set[str] | frozenset[str]) -> list[str]:
        return sorted(
            key for name, deferred, key in self.tools if not deferred or name in referenced
        )


_PROMPTS: dict[int, tuple[weakref.ref[RecordedRequest], _Prompt]] = {}


def _prompt_of(request: RecordedRequest) -> _Prompt:
    """`_Prompt.of` a recorded request, computed once while the record lives."""
    key = id(request)
    hit = _PROMPTS.get(key)
    if hit is not None and hit[0]() is request:
        return hit[1]
    prompt = _Prompt.of(request.body)

    def forget(_: object) -> None:
        _PROMPTS.pop(key, None)

    _PROMPTS[key] = (weakref.ref(request, forget), prompt)
    return prompt


def _mismatch(
    new: _Prompt,
    at: tuple[int, int, int],
    content: list[Any],
    role: object,
    origin: _Origin,
    base: _Prompt | None = None,
) -> str | None:
    """What differs between a block's prefix here and where it was produced.

    `at` is (message index, block index, how many thinking blocks come before it), `content`
    its message's content and `role` that message's role; `base` the prompt of the
    on-demand compaction request whose block starts `new`, if any (R22).
    """
    i, j, earlier_thinking = at
    old = _prompt_of(origin.request)
    old_content = as_list(origin.request.reply.get("content"))[: origin.position]
    compacted = compaction_start([{"role": "assistant", "content": old_content}])
    if compacted is not None:  # produced after a compaction block of its own reply (R6)
        old_content = old_content[compacted[1] :]
        old = _Prompt(old.system, old.tools, (), (b"",), (), old.referenced)
    if new.system != old.system:
        return "system"
    referenced = _referenced(old_content, set(old.referenced))
    if new.tool_set(referenced) != old.tool_set(referenced):
        return "tools"
    count = len(old.messages)
    if base is not None and old.messages[:1] != new.messages[:1]:
        # R22: a kept turn produced before the on-demand compaction stays valid when the
        # kept turns directly follow the summarized messages, unchanged, under the same
        # system and tools as the compaction request
        kept = (*new.opened, *new.messages[1:i]) if i else ()  # "first content block of
        # first message": the first kept turn may follow the block in its message
        if base.system != new.system or base.tool_set(referenced) != new.tool_set(referenced):
            return "system" if base.system != new.system else "tools"
        expected = (*base.messages, *kept)
        if old.messages != expected:
            both = zip(old.messages, expected, strict=False)
            k = next((k for k, (a, b) in enumerate(both) if a != b), min(count, len(expected)))
            summarized = len(base.messages)
            return f"messages.{k - summarized + 1 if k >= summarized else 0}"
    elif i != count or new.chain[i] != old.chain[count]:
        for k in range(max(i, count)):
            if k >= i or k >= count or new.messages[k] != old.messages[k]:
                return f"messages.{k}"
    here = [b for b in content[:j] if not _is_thinking(b)]
    here = here[1:] if base is not None and not i else here  # R22: the block opens it
    if role != "assistant" or not _same(here, [b for b in old_content if not _is_thinking(b)]):
        return f"messages.{i}"
    sent = new.thinking[:earlier_thinking]
    produced = (*old.thinking, *_thinking_of(old_content))
    if len(sent) > len(produced) or produced[len(produced) - len(sent) :] != sent:
        return "thinking"
    return None


def _sealed(block: Mapping[str, Any]) -> str:
    """What a thinking block's signature seals: the block without it, canonical."""
    return by_value(without_cache_control({k: v for k, v in block.items() if k != "signature"}))


def _claims(body: Mapping[str, Any], before: Sequence[Any]) -> dict[str, Any]:
    """The prefix a block made after `before` (its reply's earlier blocks) is bound to (R6).

    The same facts `_mismatch` reads from the producing request, as digests: they travel
    in the signature, so a fake that never saw the request checks the prefix all the same.
    """
    old = _Prompt.of(body)
    old_content = list(before)
    compacted = compaction_start([{"role": "assistant", "content": old_content}])
    if compacted is not None:  # produced after a compaction block of its own reply (R6)
        old_content = old_content[compacted[1] :]
        old = _Prompt(old.system, old.tools, (), (b"",), (), old.referenced)
    referenced = _referenced(old_content, set(old.referenced))
    return {
        "s": digest(old.system),
        "r": sorted(referenced),
        "t": digest(by_value(old.tool_set(referenced))),
        "m": digests(old.messages),
        "c": digest(
            by_value(without_cache_control([b for b in old_content if not _is_thinking(b)]))
        ),
        "h": digests((*old.thinking, *_thinking_of(old_content))),
    }


def sign_thinking(reply: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """`reply` with each ``thinking`` block's ``signature`` sealed (`_signing`).

    The fake's id (``sig_0001``) becomes ``sig_0001.<claims>.<tag>``: the tag covers the
    block's text and the claims the prefix it was produced after (`_claims`), so any fake
    verifies the block statelessly, as the API does.
    """
    content = list(as_list(reply.get("content")))
    for position, block in dicts(content):
        if block.get("type") == "thinking" and isinstance(block.get("signature"), str):
            claims = _claims(body, content[:position])
            signature = seal(block["signature"], _sealed(block), claims)
            content[position] = {**block, "signature": signature}
    return {**reply, "content": content}


def _claimed_mismatch(
    new: _Prompt,
    at: tuple[int, int, int],
    content: list[Any],
    role: object,
    claims: Mapping[str, Any],
) -> str | None:
    """`_mismatch` against the prefix a sealed signature carries (`_claims`).

    Not covered this way: R22 (a block produced before an on-demand compaction), which
    needs the compaction request; such a block passes only on the fake that made it.
    """
    i, j, earlier_thinking = at
    if digest(new.system) != claims.get("s"):
        return "system"
    referenced = {str(name) for name in as_list(claims.get("r"))}
    if digest(by_value(new.tool_set(referenced))) != claims.get("t"):
        return "tools"
    old, mine = unpacked(str(claims.get("m", ""))), unpacked(digests(new.messages[:i]))
    if old != mine:
        for k in range(max(i, len(old))):
            if k >= i or k >= len(old) or mine[k] != old[k]:
                return f"messages.{k}"
    here = [b for b in content[:j] if not _is_thinking(b)]
    if role != "assistant" or digest(by_value(without_cache_control(here))) != claims.get("c"):
        return f"messages.{i}"
    sent = unpacked(digests(new.thinking[:earlier_thinking]))
    produced = unpacked(str(claims.get("h", "")))
    if len(sent) > len(produced) or produced[len(produced) - len(sent) :] != sent:
        return "thinking"
    return None


def _shifted(reason: str | None, offset: int) -> str | None:
    """A ``messages.<k>`` reason of the view as an index of the request."""
    if reason is None or not reason.startswith("messages.") or not offset:
        return reason
    return f"messages.{int(reason.split('.')[1]) + offset}"


def _summarized(
    body: Mapping[str, Any], start: tuple[int, int], earlier: Sequence[RecordedRequest]
) -> _Prompt | None:
    """The prompt of the on-demand compaction request whose block starts the view (R22)."""
    messages = as_list(body.get("messages"))
    if not messages or compaction_start(messages) is None:
        return None
    block = as_list(messages[start[0]].get("content"))[start[1]]
    for request in earlier:
        if request.status != 200 or request.body.get("compaction") is None:
            continue
        for _, returned in dicts(request.reply.get("content")):
            if returned.get("type") == "compaction" and _same(returned, block):
                return _prompt_of(request)
    return None


def _behaviour(body: Mapping[str, Any]) -> str:
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, dict) else None
    value = binding.get("prefix_mismatch_behavior") if isinstance(binding, dict) else None
    return "drop_block" if value == "drop_block" else "error"


def judge_thinking(body: Mapping[str, Any], earlier: Sequence[RecordedRequest]) -> ThinkingVerdict:
    """Check every thinking block of a request against where this fake produced it.

    Args:
        body: The request's JSON body.
        earlier: The fake's earlier requests (their 200 replies are the producers).

    Returns:
        The verdict; empty for models that do not run the check (`ClaudeModel`).
    """
    model = claude_model(body.get("model"))
    if model is None or not model.prefix_check:
        return ThinkingVerdict()
    origins = _origins(earlier)
    prompt = _Prompt.of(body)
    failures: list[BlockFailure] = []
    order: list[str] = []
    start = compaction_start(body.get("messages")) or (0, 0)
    base = _summarized(body, start, earlier)
    for t, message in dicts(from_compaction(body.get("messages"))):
        content = as_list(message.get("content"))
        i, shift = t + start[0], start[1] if t == 0 else 0  # indexes in the request
        for j, block in dicts(content):
            if block.get("type") not in _THINKING:
                continue
            at = (t, j, len(order))
            order.append(f"messages.{i}.content.{j + shift}")
            key = _key(block)
            origin = origins.get(key) if key is not None else None
            claims = None if origin is not None else opened(block.get("signature"), _sealed(block))
            reason: str | None = _TAMPERED
            if origin is not None and _same(block, origin.block):
                reason = _mismatch(prompt, at, content, message.get("role"), origin, base)
            elif claims is not None:  # issued by a fake with the same key (another process)
                reason = _claimed_mismatch(prompt, at, content, message.get("role"), claims)
            reason = _shifted(reason, start[0])
            if reason is not None:
                failures.append(BlockFailure(i, j + shift, str(block.get("type")), reason))
    if not failures:
        return ThinkingVerdict()
    tampered = next((f for f in failures if f.reason == _TAMPERED), None)
    if _behaviour(body) == "error":
        return ThinkingVerdict(tuple(failures), refused=failures[0])
    if tampered is not None:
        return ThinkingVerdict(tuple(failures), refused=tampered)
    first = order.index(failures[0].path)
    return ThinkingVerdict(tuple(failures), dropped=tuple(order[first:]))


_CHANGED = {
    "system": "The `system` prompt differs from the one the block was created with.",
    "tools": "The `tools` list differs from the one the block was created with.",
    "thinking": "A thinking block before it was removed from between others, or put back.",
}


def refusal_text(failure: BlockFailure, headers: Mapping[str, str]) -> str:
    """The 400 message for a block (R4)."""
    redacted = failure.kind == "redacted_thinking"
    field, kind = ("data", "redacted_thinking") if redacted else ("signature", "thinking")
    opening = f"{failure.path}: Invalid `{field}` in `{kind}` block."
    if failure.reason == _TAMPERED:
        return opening
    text = (
        f"{opening} The block is bound to a different conversation. Remove the block, or set "
        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
    )
    if THINKING_BETA not in betas(headers):
        text += (
            f" That setting requires the `{THINKING_BETA}` value in the `anthropic-beta` header."
        )
    changed = _CHANGED.get(failure.reason)
    if changed is None:
        changed = f"{failure.reason} differs from the conversation the block was created in."
    return f"{text} {changed}"


@provider_worded
def anthropic_thinking_prefix(
    body: Mapping[str, Any],
    earlier: Sequence[RecordedRequest],
    *,
    headers: Mapping[str, str] = NO_HEADERS,
) -> Iterator[str]:
    """Thinking blocks sent back match the conversation they were created in (R1-R11).

    Only on models that run the check (`ClaudeModel.prefix_check`); see the module
    docstring for what counts as a change. Yields the API's 400 text for the first failing
    block, unless ``drop_block`` lets the request through.
    """
    refused = judge_thinking(body, earlier).refused
    if refused is not None:
        yield refusal_text(refused, headers)


def input_transformations(
    verdict: ThinkingVerdict, *, enforced: bool = True
) -> list[dict[str, str]]:
    """The reply's ``input_transformations`` for a request that went through (R28).

    Args:
        verdict: The request's `judge_thinking` verdict.
        enforced: Whether the fake enforces the check; when not, each failing block is
            reported as ``thinking_mismatch_allowed`` (an account the check is not
            enforced on, R3).
    """
    if verdict.dropped:
        return [
            {"type": "thinking_dropped", "path": path, "reason": "prefix_binding_mismatch"}
            for path in verdict.dropped
        ]
    if enforced:
        return []
    return [
        {"type": "thinking_mismatch_allowed", "path": f.path, "reason": "prefix_binding_mismatch"}
        for f in verdict.failures
        if f.reason != _TAMPERED
    ]


@provider_worded
def anthropic_block_binding(
    body: Mapping[str, Any],
    earlier: Sequence[RecordedRequest],
    *,
    headers: Mapping[str, str] = NO_HEADERS,
) -> Iterator[str]:
    """``thinking.block_binding`` comes with its beta header and a thinking type taking it.

    The field needs ``anthropic-beta: thinking-binding-controls-2026-08-01`` and
    ``thinking.type`` ``adaptive`` or ``enabled`` (R2; Sonnet 5.5's ``between_tools``
    refuses it, ``about-claude/models/whats-new-sonnet-5-5``); any model accepts it.
    """
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or "block_binding" not in thinking:
        return
    if THINKING_BETA not in betas(headers) or thinking.get("type") not in ("adaptive", "enabled"):
        yield "thinking.block_binding: Extra inputs are not permitted"
        return
    binding = thinking["block_binding"]
    if binding is None:
        return
    if not isinstance(binding, dict):
        yield "thinking.block_binding: Input should be a valid dictionary or object"
        return
    for key in sorted(set(binding) - {"prefix_mismatch_behavior"}):
        yield f"thinking.block_binding.{key}: Extra inputs are not permitted"
    if binding.get("prefix_mismatch_behavior") not in (None, "error", "drop_block"):
        yield (
            "thinking.block_binding.prefix_mismatch_behavior: "
            "Input should be 'error' or 'drop_block'"
        )
