"""The fake providers: one HTTP handler per wire API, for the SDKs' mock transports.

A fake is called with each HTTP request the SDK client sends (``fake(request)``) and
returns the response, built with the request's own httpx module (``httpx`` or its fork
``httpx2``, whichever the SDK uses), so neither httpx nor any SDK is imported here. For
each request it:

1. records it (`RecordedRequest`), whatever happens next;
2. answers 404 unless it is a POST to the fake's endpoint, 400 unless the body is a JSON
   object;
3. runs its rules (`contextchef.testing._rules`): any problem is recorded as a `Violation`
   and answered as the provider's HTTP 400 error body, naming every rule broken (a rule
   marked `provider_worded` has its message sent as the provider words it); rules that
   declare a keyword-only ``headers`` parameter get the request's headers;
4. pops the next scripted turn and answers it in the provider's response shape (Anthropic
   adds ``input_transformations`` and ``diagnostics`` when the request asks for them); with
   nothing left it answers HTTP 500 saying the script ran out (also a `Violation`); a turn
   calling a deferred tool the request never revealed is refused with HTTP 400
   (`contextchef.testing._reveals`, Anthropic and Responses) and stays queued.

A refused request consumes no scripted turn. Fakes are deterministic: no clock, random
numbers or environment; ids come from per-fake counters (`contextchef.testing._replies`).
"""

from __future__ import annotations

import abc
import importlib
import importlib.util
import inspect
import json
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any, ClassVar, Protocol, TypeVar

from contextchef import UsageError
from contextchef.testing import _replies, _search
from contextchef.testing._body import as_list
from contextchef.testing._openai_cache import OpenAICaching
from contextchef.testing._records import Check, RecordedRequest, Violation, is_provider_worded
from contextchef.testing._replies import Ids
from contextchef.testing._responses_context import (
    COMPACT_PATH,
    compacted_response,
    compaction_item,
)
from contextchef.testing._reveals import CallNotRevealed, responses_unrevealed
from contextchef.testing._rules import CHAT_RULES, GEMINI_RULES, RESPONSES_RULES
from contextchef.testing._script import RawReply, Turn, raw
from contextchef.testing._search import SearchNotAnswerable
from contextchef.testing._signing import FAKE_SIGNING_KEY, signing_key

__all__ = [
    "RECORDED_HEADERS",
    "FakeGemini",
    "FakeOpenAIChat",
    "FakeProvider",
    "FakeResponses",
    "HTTPRequest",
    "httpx_for",
]

RECORDED_HEADERS: tuple[str, ...] = (
    "anthropic-beta",
    "anthropic-version",
    "content-type",
    "openai-beta",
)
"""Headers a fake records by default (`RecordedRequest.headers`)."""
_CREDENTIALS = frozenset(
    {"api-key", "authorization", "cookie", "proxy-authorization", "x-api-key", "x-goog-api-key"}
)

_F = TypeVar("_F", bound="FakeProvider")


class _URL(Protocol):
    @property
    def path(self) -> str: ...


class HTTPRequest(Protocol):
    """What a fake reads from a request: an ``httpx.Request`` or ``httpx2.Request``."""

    @property
    def method(self) -> str:
        """The HTTP method."""

    @property
    def url(self) -> _URL:
        """The URL (only its ``path`` is read)."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The request headers (case-insensitive)."""

    @property
    def content(self) -> bytes:
        """The body, already read (mock transports read it before calling the handler)."""


def _rule_name(check: Check) -> str:
    return str(getattr(check, "__name__", repr(check)))


def _takes_headers(check: Check) -> bool:
    """Whether a rule declares a keyword-only ``headers`` parameter."""
    try:
        parameter = inspect.signature(check).parameters.get("headers")
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.kind is inspect.Parameter.KEYWORD_ONLY


# (rule name, message, worded as the provider words it)
_Found = list[tuple[str, str, bool]]


def _parse(content: bytes) -> Any:
    """The JSON body, or None when it is not JSON."""
    try:
        return json.loads(content)
    except ValueError:
        return None


class FakeProvider(abc.ABC):
    """A scripted, rule-checking fake of one provider endpoint (see the subclasses).

    Use it as the handler of the SDK client's mock transport (`transport`,
    `http_client`, or `async_http_client` for the SDKs' async clients); queue the model's
    turns with `script`; read `requests` and `violations` afterwards.

    Args:
        rules: The checks run on every request, replacing the class's `default_rules`
            (pass ``()`` to check nothing, ``(*FakeAnthropic.default_rules, mine)`` to add).
        record_headers: Header names to record on each request (never credentials).
        ids: The id counters. Pass one `Ids` to several fakes that serve the same session
            (a conversation moved between providers) so their ids never repeat; each fake
            counts on its own by default.
        signing_key: The HMAC key (bytes) the provider-issued opaque tokens are sealed
            with (thinking signatures, compaction blocks and items, thought signatures;
            `contextchef.testing._signing`). Any fake with the same key accepts what
            another issued, in any process: the default, `FAKE_SIGNING_KEY`, is shared by
            every fake; a fake with another key acts as another account and refuses them.

    Raises:
        UsageError: A rule is not callable, a credential header is asked for, or
            `signing_key` is not non-empty bytes.
    """

    endpoint: ClassVar[str] = ""
    """The path this fake answers (a base URL may put a prefix before it)."""
    wire: ClassVar[str] = ""
    """The wire format it speaks (`Profile.wire`): it fakes every target on that wire."""
    default_rules: ClassVar[tuple[Check, ...]] = ()
    """The rules checked when none are given."""
    refuse_unrevealed: bool = True
    """Refuse a scripted call to a deferred tool nothing revealed (`_reveals`); set False
    on an instance to script the stray calls a model makes anyway."""
    _suffix: ClassVar[str] = ""

    def __init__(
        self,
        *,
        rules: Iterable[Check] | None = None,
        record_headers: Iterable[str] = RECORDED_HEADERS,
        ids: Ids | None = None,
        signing_key: bytes = FAKE_SIGNING_KEY,
    ) -> None:
        if not isinstance(signing_key, bytes) or not signing_key:
            raise UsageError(f"signing_key must be non-empty bytes, got {signing_key!r}")
        self._signing_key = signing_key
        self._rules = tuple(self.default_rules if rules is None else rules)
        for check in self._rules:
            if not callable(check):
                raise UsageError(f"a rule must be a function (body, earlier), got {check!r}")
        self._with_headers = tuple(_takes_headers(check) for check in self._rules)
        self._headers = tuple(h.lower() for h in record_headers)
        secret = sorted(_CREDENTIALS.intersection(self._headers))
        if secret:
            raise UsageError(f"credentials are never recorded; drop {secret} from record_headers")
        self._script: deque[Turn | RawReply] = deque()
        self._requests: list[RecordedRequest] = []
        self._violations: list[Violation] = []
        self._ids = ids if ids is not None else Ids()
        self._lock = threading.Lock()

    # -- setup ---------------------------------------------------------------------------

    def script(self: _F, *turns: Turn | RawReply | Mapping[str, Any]) -> _F:
        """Queue the model's next turns, one per accepted request, in order.

        Args:
            *turns: `text(...)` / `tool_calls(...)` turns, `raw(...)` replies, or plain
                dicts (sent as is with HTTP 200).

        Returns:
            The fake itself, for chaining.

        Raises:
            UsageError: Something that is not a turn, a raw reply or a dict.
        """
        queued: list[Turn | RawReply] = []
        for i, turn in enumerate(turns):
            if isinstance(turn, Mapping):
                queued.append(raw(turn))
            elif isinstance(turn, (Turn, RawReply)):
                queued.append(turn)
            else:
                raise UsageError(
                    f"turn {i} is a {type(turn).__name__}; script text(...), "
                    "tool_calls(...), raw(...) or a dict"
                )
        with self._lock:
            self._script.extend(queued)
        return self

    def transport(self, httpx_module: ModuleType) -> Any:
        """A mock transport serving this fake: ``httpx_module.MockTransport(self)``.

        Args:
            httpx_module: The httpx flavour the SDK uses (see `httpx_for`).
        """
        return httpx_module.MockTransport(self)

    def http_client(self, httpx_module: ModuleType, **kwargs: Any) -> Any:
        """An ``httpx_module.Client`` over `transport`, for the SDK's ``http_client``.

        Args:
            httpx_module: The httpx flavour the SDK uses (see `httpx_for`).
            **kwargs: Passed on to the client.
        """
        return httpx_module.Client(transport=self.transport(httpx_module), **kwargs)

    def async_http_client(self, httpx_module: ModuleType, **kwargs: Any) -> Any:
        """An ``httpx_module.AsyncClient`` over `transport`, for the async SDK clients.

        Args:
            httpx_module: The httpx flavour the SDK uses (see `httpx_for`).
            **kwargs: Passed on to the client.
        """
        return httpx_module.AsyncClient(transport=self.transport(httpx_module), **kwargs)

    # -- what happened -------------------------------------------------------------------

    @property
    def rules(self) -> tuple[Check, ...]:
        """The checks run on every request."""
        return self._rules

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request received, in order, refused ones included."""
        with self._lock:
            return tuple(self._requests)

    @property
    def violations(self) -> tuple[Violation, ...]:
        """Every refusal, in order: broken rules, unknown endpoints, script exhaustion."""
        with self._lock:
            return tuple(self._violations)

    @property
    def pending(self) -> int:
        """Scripted turns not used yet."""
        with self._lock:
            return len(self._script)

    # -- serving -------------------------------------------------------------------------

    def __call__(self, request: HTTPRequest) -> Any:
        """Answer one request: an httpx response of the request's own httpx module."""
        with self._lock:
            status, reply = self._serve(request)
        httpx_module = sys.modules[type(request).__module__.partition(".")[0]]
        # JSON escapes (ASCII): a scripted lone surrogate goes out as the "\ud800" escape
        # a real server could send, not as bytes UTF-8 cannot encode
        body = json.dumps(reply, separators=(",", ":")).encode("ascii")
        return httpx_module.Response(
            status, content=body, headers={"content-type": "application/json"}
        )

    def _serve(self, request: HTTPRequest) -> tuple[int, dict[str, Any]]:
        index, method, path = len(self._requests), request.method, request.url.path
        body = _parse(request.content)
        sent = {
            name.lower(): value
            for name, value in request.headers.items()
            if name.lower() not in _CREDENTIALS
        }
        with signing_key(self._signing_key):  # opaque tokens sealed and opened with it
            status, reply = self._answer(index, method, path, body, sent)
        headers = {name: sent[name] for name in self._headers if name in sent}
        self._requests.append(
            RecordedRequest(
                index=index,
                method=method,
                path=path,
                headers=headers,
                body=body,
                status=status,
                reply=reply,
            )
        )
        return status, reply

    def _answer(
        self, index: int, method: str, path: str, body: Any, headers: Mapping[str, str]
    ) -> tuple[int, dict[str, Any]]:
        name = type(self).__name__
        if method != "POST" or not self._serves(path):
            message = f"{method} {path} is not served by {name}; it answers POST {self.endpoint}"
            return self._refuse(index, 404, [("unknown_endpoint", message, False)])
        if not isinstance(body, dict):
            message = "the body is not a JSON object"
            return self._refuse(index, 400, [("invalid_json", message, False)])
        if body.get("stream") is True:  # a scripted turn is a whole response, never SSE
            message = f"{name} does not stream: send the request without stream=True"
            return self._refuse(index, 400, [("streaming_unsupported", message, False)])
        earlier = tuple(self._requests)
        found = self._check(body, earlier, headers)
        if found:
            return self._refuse(index, 400, found)
        unscripted = self._unscripted(path, body)
        if unscripted is not None:  # the API answers this request itself (no model turn)
            return 200, unscripted
        if not self._script:
            message = (
                f"the script ran out: request {index} found no scripted turn left; queue the "
                "model's turns with fake.script(...) before sending"
            )
            return self._refuse(index, 500, [("script_exhausted", message, False)])
        turn = self._script[0]
        if isinstance(turn, RawReply):
            self._script.popleft()
            return turn.status, dict(turn.body)
        try:
            reply = self._reply(turn, self._model(path, body), body)
        except SearchNotAnswerable as exc:  # a scripting mistake: the turn stays queued
            return self._refuse(index, 500, [("provider_search", str(exc), False)])
        except CallNotRevealed as exc:  # the model could not make this call: it stays queued
            return self._refuse(index, 400, [("tool_not_revealed", str(exc), False)])
        self._script.popleft()
        return 200, self._extend(reply, body, earlier, headers)

    def _check(
        self, body: dict[str, Any], earlier: tuple[RecordedRequest, ...], headers: Mapping[str, str]
    ) -> _Found:
        found: _Found = []
        for check, with_headers in zip(self._rules, self._with_headers, strict=True):
            try:
                if with_headers:
                    takes_headers: Callable[..., Iterable[str]] = check
                    problems = list(takes_headers(body, earlier, headers=headers))
                else:
                    problems = list(check(body, earlier))
            except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
                # a body so malformed the rule cannot read it: the API would refuse it too
                problems = [f"the request body cannot be read ({type(exc).__name__}: {exc})"]
            worded = is_provider_worded(check)
            found += [(_rule_name(check), str(problem), worded) for problem in problems]
        return found

    def _refuse(self, index: int, status: int, found: _Found) -> tuple[int, dict[str, Any]]:
        for rule, message, _ in found:
            self._violations.append(
                Violation(request_index=index, rule=rule, message=message, status=status)
            )
        name = type(self).__name__
        first = next((k for k, (_, _, worded) in enumerate(found) if worded), None)
        if first is None:
            text = "; ".join(f"rule {rule} broken: {message}" for rule, message, _ in found)
            return status, self._error(status, f"{name}: {text}")
        rest = "; ".join(
            f"rule {rule} broken: {message}"
            for k, (rule, message, _) in enumerate(found)
            if k != first
        )
        text = found[first][1] + (f" ({name} also found: {rest})" if rest else "")
        return status, self._error(status, text)

    # -- per API -------------------------------------------------------------------------

    def _serves(self, path: str) -> bool:
        return path.endswith(self._suffix)

    def _unscripted(self, path: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """A reply the API gives without a model turn (none by default)."""
        return None

    def _model(self, path: str, body: Mapping[str, Any]) -> str:
        model = body.get("model")
        return model if isinstance(model, str) else ""

    @abc.abstractmethod
    def _reply(self, turn: Turn, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """`turn` as this API's response body to the request `body`.

        Raises:
            SearchNotAnswerable: `turn` has a provider search `body` cannot honour.
        """

    @abc.abstractmethod
    def _error(self, status: int, message: str) -> dict[str, Any]:
        """This API's error body."""

    def _extend(
        self,
        reply: dict[str, Any],
        body: Mapping[str, Any],
        earlier: tuple[RecordedRequest, ...],
        headers: Mapping[str, str],
    ) -> dict[str, Any]:
        """`reply` with the fields this API adds for this request (none by default)."""
        return reply


class FakeOpenAIChat(OpenAICaching, FakeProvider):
    """OpenAI Chat Completions, also DeepSeek (``openai.OpenAI(http_client=...)``).

    Answers any path ending in ``/chat/completions`` (DeepSeek's base URL has no ``/v1``);
    scripted reasoning is sent as ``reasoning_content``, as DeepSeek's thinking mode does.
    Checks `CHAT_RULES`; ``usage`` reports its prompt cache (`cache_outcomes`,
    `contextchef.testing._openai_cache`).
    """

    wire = "openai"
    endpoint = "/v1/chat/completions"
    default_rules = CHAT_RULES
    _suffix = "/chat/completions"

    def _reply(self, turn: Turn, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
        _search.no_provider_search(turn, "Chat Completions")
        return _replies.chat_reply(turn, model, self._ids)

    def _error(self, status: int, message: str) -> dict[str, Any]:
        return _replies.openai_error(status, message)


class FakeResponses(OpenAICaching, FakeProvider):
    """OpenAI Responses (``openai.OpenAI(http_client=...).responses``), `RESPONSES_RULES`.

    ``usage`` reports its prompt cache (`cache_outcomes`), and ``prompt_cache_diagnostics``
    answers a ``comparison_response_id`` (`contextchef.testing._openai_cache`). With
    ``context_management: [{"type": "compaction", "compact_threshold": N}]`` the output
    starts with a ``compaction`` item once the input from the newest compaction item on
    reaches N estimated tokens; ``POST /v1/responses/compact`` answers the input's user
    messages and one compaction item (no scripted turn used); compaction items it did not
    return are refused (`contextchef.testing._responses_context`).
    """

    wire = "responses"
    endpoint = "/v1/responses"
    default_rules = RESPONSES_RULES
    _suffix = "/v1/responses"

    def _serves(self, path: str) -> bool:
        return path.endswith((self._suffix, COMPACT_PATH))

    def _unscripted(self, path: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """``POST /v1/responses/compact``: the user messages and one compaction item."""
        return compacted_response(body, self._ids) if path.endswith(COMPACT_PATH) else None

    def _reply(self, turn: Turn, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
        if self.refuse_unrevealed:
            responses_unrevealed(turn, body)
        searched = _search.responses_search_items(turn.searches, body, self._ids)
        return _replies.responses_reply(turn, model, self._ids, searched)

    def _error(self, status: int, message: str) -> dict[str, Any]:
        return _replies.openai_error(status, message)

    def _extend(
        self,
        reply: dict[str, Any],
        body: Mapping[str, Any],
        earlier: tuple[RecordedRequest, ...],
        headers: Mapping[str, str],
    ) -> dict[str, Any]:
        """Scripted calls come back as the API would send them.

        The API returns calls to tools loaded by ``tool_search`` in their namespace (a
        flat deferred function's is its own name); a scripted turn names only the tool.
        Where the request declares a client-executed ``tool_search``, a scripted call
        named ``tool_search`` comes back as a ``tool_search_call`` item (``execution:
        "client"``, its arguments as an object).
        """
        reply = super()._extend(reply, body, earlier, headers)
        homes = _replies.namespace_homes(body.get("tools"))
        for item in body.get("input") or ():  # tools loaded or added mid-conversation
            if isinstance(item, dict) and item.get("type") in _LOADING_ITEMS:
                homes |= _replies.namespace_homes(
                    [
                        {**t, "defer_loading": True} if t.get("type") == "function" else t
                        for t in as_list(item.get("tools"))
                        if isinstance(t, dict)
                    ]
                )
        client = _replies.client_search(body.get("tools"))
        output = reply.get("output") or []
        compacted = compaction_item(body, self._ids)
        if compacted is not None:
            output.insert(0, compacted)
        for k, item in enumerate(output):
            if item.get("type") != "function_call":
                continue
            if client and item.get("name") == client:
                output[k] = _replies.search_call(item)
            elif item.get("name") in homes:
                item["namespace"] = homes[item["name"]]
        return reply


_LOADING_ITEMS = ("tool_search_output", "additional_tools")


class FakeGemini(FakeProvider):
    """Gemini ``generateContent`` (google-genai ``Client``), `GEMINI_RULES`.

    Args:
        call_ids: Give function calls ids (``call_0001``...), as Vertex AI and recent
            Gemini models do; False sends calls without ids.
        rules: As for `FakeProvider`.
        record_headers: As for `FakeProvider`.
        ids: As for `FakeProvider`.
    """

    wire = "gemini"
    endpoint = "/models/{model}:generateContent"
    default_rules = GEMINI_RULES
    _path = re.compile(r"/models/(?P<model>[^/:]+):generateContent$")

    def __init__(
        self,
        *,
        call_ids: bool = True,
        rules: Iterable[Check] | None = None,
        record_headers: Iterable[str] = RECORDED_HEADERS,
        ids: Ids | None = None,
        signing_key: bytes = FAKE_SIGNING_KEY,
    ) -> None:
        super().__init__(
            rules=rules, record_headers=record_headers, ids=ids, signing_key=signing_key
        )
        self._call_ids = call_ids

    def _serves(self, path: str) -> bool:
        return self._path.search(path) is not None

    def _model(self, path: str, body: Mapping[str, Any]) -> str:
        found = self._path.search(path)
        return found["model"] if found else ""

    def _reply(self, turn: Turn, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
        _search.no_provider_search(turn, "Gemini generateContent")
        return _replies.gemini_reply(turn, model, self._ids, call_ids=self._call_ids)

    def _error(self, status: int, message: str) -> dict[str, Any]:
        return _replies.gemini_error(status, message)


def httpx_for(sdk: ModuleType) -> ModuleType:
    """The httpx flavour (``httpx`` or its fork ``httpx2``) an SDK's HTTP client is built on.

    Read from the SDK's ``DefaultHttpxClient`` (``anthropic``, ``openai``). For SDKs
    without one (google-genai, which accepts either), the first importable of ``httpx2``
    and ``httpx``.

    Args:
        sdk: The SDK's top-level module, e.g. ``anthropic``.

    Raises:
        UsageError: Neither can be found.
    """
    client = getattr(sdk, "DefaultHttpxClient", None)
    if isinstance(client, type):
        for cls in client.__mro__:
            package = cls.__module__.partition(".")[0]
            if cls.__name__ == "Client" and package in ("httpx", "httpx2"):
                return importlib.import_module(package)
        raise UsageError(f"{sdk.__name__}.DefaultHttpxClient derives from no httpx Client")
    for package in ("httpx2", "httpx"):
        if importlib.util.find_spec(package) is not None:
            return importlib.import_module(package)
    raise UsageError(f"cannot tell which httpx {sdk.__name__} uses, and none is installed")
