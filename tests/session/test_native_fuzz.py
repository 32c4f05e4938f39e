"""Random long sessions per disclosure strategy: the provider-native ones, ``auto`` and ``client``.

For each (strategy, model) of `native_session.COMBOS` Hypothesis draws a chef (GitHub
deferred, or everything deferred but some filesystem pins; starting in the ``review`` mode
or not; ``require_search`` or not) and 10-25 steps: the user asks something; the model
answers with text, calls one or two resident tools, searches (our ``tool_search`` by name
or query; a provider search scripted as a raw reply), calls a deferred tool by name once
it was revealed (or through ``defer_execute`` under ``client``), calls a tool it is no
longer shown or a blocked one, with signed thinking where the model has it; the host
switches mode, registers a runtime tool, loads a toolkit, blocks and unblocks tools,
announces and retracts, compacts, restores a snapshot into a new chef, compiles without
sending, switches to another model of the same target and strategy (the ledger is per
target: breakit3 F06/F10/F11 were missed without this step). Each model turn goes
through the official SDK client to the fake, which enforces
the provider's rules.

Checked on every request: the fake accepted it; the SDK's request types accept it (the
non-beta types unless it carries tool changes; the beta types whenever it needs a beta
header); with no edit reported it extends the previous request and keeps its system and
prefix fingerprint (on tool-change models only compaction may edit); a provider search
cannot find a tool the mode hides. After the session: the independent prefix checker
finds nothing (``claude-opus-5-5``); the gate allowed no call to a tool the model was not
shown or the mode hides or the blocklist holds, and refused no call to a tool the model
was shown; every tool the mode hides is denied by ``check_tool_call``.

Sessions per combination: 5 under ``CONTEXTCHEF_FULL_TESTS=1``, 2 by default
(tests/conftest.py). The library bugs it found are reproduced at the end:
those fixed since as plain regression tests, the open ones marked strict xfail; the fuzz
steps around the open ones (`native_session.KNOWN_BUGS`).
"""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_session import (
    COMBOS,
    HOST_STEPS,
    KNOWN_BUGS,
    MODEL_STEPS,
    THINKING,
    VARIANTS,
    Catalogs,
    Combo,
    NativeSession,
    Step,
    load_catalogs,
)

from conftest import examples
from contextchef import (
    Allowed,
    ContextChef,
    DeferredConfig,
    Denied,
    ToolResult,
    tool_results,
    user,
)
from contextchef.testing import (
    FakeAnthropic,
    FakeResponses,
    RawReply,
    httpx_for,
    raw,
    text,
    tool_calls,
)
from contextchef.testing._replies import response_body

HX = httpx_for(anthropic)
EXAMPLES = examples(full=5, default=2)
OPUS = "claude-opus-5-5"


@pytest.fixture(scope="module")
def catalogs(catalogs_dir: Path) -> Catalogs:
    return load_catalogs(catalogs_dir)


steps = st.builds(
    Step,
    st.sampled_from(HOST_STEPS + MODEL_STEPS * 3),  # model turns three times as likely
    st.integers(0, 63),
    st.sampled_from([True, True, True, False]),
)
sessions = st.tuples(st.sampled_from(VARIANTS), st.lists(steps, min_size=10, max_size=25))


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: c.id)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(session=sessions)
def test_random_native_sessions(
    combo: Combo, catalogs: Catalogs, session: tuple[str, list[Step]]
) -> None:
    variant, drawn = session
    NativeSession(combo, catalogs, variant, avoid=frozenset(KNOWN_BUGS)).run(drawn)


# -- the library bugs the fuzz found, one deterministic reproducer each ----------------------

COMPAT = "acme-responses-1"
"""A Responses-compatible endpoint's model: forced native, but no mid-conversation tool
changes, so a mode change edits ``tools`` (what these reproducers need)."""


def _chef(catalogs_dir: Path, review: list[str]) -> ContextChef:
    chef = ContextChef(defer=["github__*"], modes={"review": review})
    chef.register_catalog(catalogs_dir / "github.json")
    chef.register_catalog(catalogs_dir / "mcp-filesystem.json")
    return chef


def _response(n: int, *items: dict[str, Any]) -> RawReply:
    return raw(response_body(list(items), model="gpt-5.4", response_id=f"resp_{n}"))


def _hosted_search(n: int, namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """What OpenAI's hosted search returns when it loads `namespace`."""
    common = {"call_id": None, "execution": "server", "status": "completed"}
    paths = {"paths": [namespace["name"]]}
    return [
        {"type": "tool_search_call", "id": f"tsc_{n}", "arguments": paths, **common},
        {"type": "tool_search_output", "id": f"tso_{n}", "tools": [copy.deepcopy(namespace)]}
        | common,
    ]


def _call(n: int, name: str, namespace: str) -> dict[str, Any]:
    """A call of `name` in `namespace`, with arguments its schema accepts."""
    arguments = {"owner": "acme", "repo": "app"}
    if name == "github__add_issue_comment":
        arguments |= {"issue_number": 7, "body": "Still failing on main."}
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "name": name,
        "namespace": namespace,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def _namespace_of(payload: dict[str, Any], name: str) -> dict[str, Any]:
    return next(
        t
        for t in payload["tools"]
        if t["type"] == "namespace" and any(f["name"] == name for f in t["tools"])
    )


def _calls(payload: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [
        (i["name"], i.get("namespace"))
        for i in payload["input"]
        if i.get("type") == "function_call"
    ]


def test_a_mode_hides_its_deferred_tools_from_the_server_search(catalogs_dir: Path) -> None:
    """``anthropic-native`` on ``claude-opus-5-5``: the review mode hides GitHub's writes.

    The tools array first sent is kept (right), the write tools stay declared with
    ``defer_loading`` (right: history may name them), but no ``tool_removal`` withdraws
    them, so the BM25 search the request carries can reveal ``github__create_issue``;
    the model then calls it and the gate refuses a tool the provider just offered. The
    README: a mode "removes every other tool from the payload, the directory and search
    results". Expected: a ``tool_removal`` for each declared deferred tool the mode hides
    (or leaving them out of what the search can find).
    """
    chef = _chef(catalogs_dir, ["github__list_*", "filesystem__read_*"])
    chef.set_history([user("Triage the issues.")])
    fake = FakeAnthropic().script(text("Looking.", reasoning=""), text("Read only.", reasoning=""))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))

    def send() -> dict[str, Any]:
        request = chef.compile(
            "anthropic", model=OPUS, strategy="anthropic-native", extra={"thinking": THINKING}
        )
        chef.ingest(client.messages.create(**request.payload, extra_headers=request.headers))
        return request.payload

    send()
    chef.append(user("Review only from now on."))
    chef.set_mode("review")
    payload = send()
    client.close()
    assert fake.violations == ()
    check = chef.check_tool_call({"id": "t", "name": "github__create_issue", "arguments": {}})
    assert isinstance(check, Denied) and check.code == "not_in_mode"
    deferred = {t["name"] for t in payload["tools"] if t.get("defer_loading")}
    withdrawn = {
        b["tool"]["name"]
        for m in payload["messages"]
        if m["role"] == "system"
        for b in m["content"]
        if b["type"] == "tool_removal"
    }
    assert "github__create_issue" not in deferred - withdrawn  # what the search can find


def test_a_call_keeps_the_namespace_its_search_output_still_loads(catalogs_dir: Path) -> None:
    """``openai-native`` on `COMPAT` (a mode edits ``tools``):
    hosted search loads ``github_8``, a call is made in it.

    The review mode keeps ``github__list_tags`` but has fewer GitHub tools, so no
    ``github_8`` namespace is declared any more. `fit_references` then strips the call's
    ``namespace`` (a ``rewrote_reference`` change) although the ``tool_search_output``
    item that loaded ``github_8`` is sent in the same input: the API answers "Missing
    namespace for function_call" (the fake's ``responses_namespaced_calls``). Expected: a
    namespace loaded by a search output still in the input is kept.
    """
    chef = _chef(catalogs_dir, ["github__list_*", "filesystem__*"])
    chef.set_history([user("Which tags exist?")])
    fake = FakeResponses()
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    first = chef.compile("responses", model=COMPAT, strategy="openai-native")
    namespace = _namespace_of(first.payload, "github__list_tags")
    fake.script(
        _response(
            1, *_hosted_search(1, namespace), _call(1, "github__list_tags", namespace["name"])
        )
    )
    (call,) = chef.ingest(client.responses.create(**first.payload))
    chef.append(tool_results([ToolResult(call_id=call.id, name=call.name, content="v1.0")]))
    chef.set_mode("review")
    second = chef.compile("responses", model=COMPAT, strategy="openai-native")
    assert namespace["name"] not in {t.get("name") for t in second.payload["tools"]}
    fake.script(text("v1.0 is the only tag."))
    with contextlib.suppress(openai.BadRequestError):
        client.responses.create(**second.payload)
    client.close()
    assert _calls(second.payload) == [("github__list_tags", namespace["name"])]
    assert fake.violations == ()


def test_a_replayed_call_drops_a_namespace_that_no_longer_holds_it(catalogs_dir: Path) -> None:
    """``openai-native`` on `COMPAT` (a mode edits ``tools``):
    a call in namespace ``github``, then compaction, a mode.

    Turn 1 loads ``github`` (ten tools, ``github__add_issue_comment`` among them) by hosted
    search; turn 2 calls ``github__add_issue_comment`` in it. Compaction keeps turn 2 only;
    the review mode then declares a ``github`` namespace holding ``github__list_*`` tools.
    `fit_references` compares the namespace's name only, so the call goes back in
    ``github``, which holds no such function and which no search output in the input
    loaded: the API refuses it. Expected: the namespace is dropped (the call sent as an
    ordinary function call), as for a namespace that is not declared at all.
    """
    chef = _chef(catalogs_dir, ["github__list_*", "filesystem__*"])
    chef.set_history([user("Find the comment tools.")])
    fake = FakeResponses()
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    first = chef.compile("responses", model=COMPAT, strategy="openai-native")
    namespace = _namespace_of(first.payload, "github__add_issue_comment")
    found = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Found them.", "annotations": []}],
    }
    fake.script(_response(1, *_hosted_search(1, namespace), found))
    chef.ingest(client.responses.create(**first.payload))
    chef.append(user("Comment on issue 7."))
    second = chef.compile("responses", model=COMPAT, strategy="openai-native")
    fake.script(_response(2, _call(2, "github__add_issue_comment", namespace["name"])))
    (call,) = chef.ingest(client.responses.create(**second.payload))
    chef.append(tool_results([ToolResult(call_id=call.id, name=call.name, content="ok")]))
    chef.compact(lambda _: "Summary: the comment tools were found.", keep_recent_turns=1)
    chef.set_mode("review")
    third = chef.compile("responses", model=COMPAT, strategy="openai-native")
    fake.script(text("Commented."))
    with contextlib.suppress(openai.BadRequestError):
        client.responses.create(**third.payload)
    client.close()
    github = _namespace_of(third.payload, "github__list_branches")
    assert github["name"] == namespace["name"]  # the same name, other functions
    assert "tool_search_output" not in json.dumps(third.payload)  # nothing else loads it
    assert fake.violations == ()
    assert _calls(third.payload) == [("github__add_issue_comment", None)]


def test_a_hosted_search_counts_as_loading_under_require_search(catalogs_dir: Path) -> None:
    """``openai-native`` on ``gpt-5.4`` with ``DeferredConfig(require_search=True)``.

    The model's turn holds the hosted search (``tool_search_call`` and a
    ``tool_search_output`` loading the namespace of ``github__list_tags``) and a call of
    ``github__list_tags`` in that namespace. `ContextChef.compile` documents that under a
    native strategy "the provider's search results count as loading", and they do for
    Anthropic's server search (``tool_search_tool_result``), but the Responses adapter
    keeps `AdapterDefaults.revealed_tools` (nothing revealed), so the gate answers
    ``not_loaded`` ("Load the schema ... first: call tool_search"), naming a tool this
    strategy does not even send. Expected: ``Allowed``.
    """
    chef = ContextChef(defer=["github__*"], deferred=DeferredConfig(require_search=True))
    chef.register_catalog(catalogs_dir / "github.json")
    chef.set_history([user("Which tags exist?")])
    fake = FakeResponses()
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    request = chef.compile("responses", model="gpt-5.4", strategy="openai-native")
    namespace = _namespace_of(request.payload, "github__list_tags")
    search = _hosted_search(1, namespace)
    fake.script(_response(1, *search, _call(1, "github__list_tags", namespace["name"])))
    (call,) = chef.ingest(client.responses.create(**request.payload))
    client.close()
    assert fake.violations == ()
    check = chef.check_tool_call(call)
    assert isinstance(check, Allowed), check


# -- found after the fixes above landed ------------------------------------------------------


@pytest.mark.parametrize("strategy", ["anthropic-native", "anthropic-native-client"])
def test_a_tool_a_mode_gives_back_is_callable_under_require_search(
    catalogs_dir: Path, strategy: str
) -> None:
    """``claude-opus-5-5`` with ``DeferredConfig(require_search=True)``.

    The review mode withdraws ``github__create_issue`` (deferred, never revealed) with a
    ``tool_removal``; when the mode goes, the next request adds it back with a
    ``tool_addition`` (the tool is offered, no longer merely searchable). The model calls
    it, and the gate answers ``not_loaded`` ("has not been revealed yet: find it with your
    tool search first" / "Load ... first"), refusing a tool the request just offered.
    Expected: ``Allowed`` (a tool added back counts as revealed), or no addition. Under
    ``anthropic-native-client`` our search answers, so the mode does not withdraw a
    deferred tool never offered (fresh-user report: one mode round trip offered the whole
    catalog); the tool stays deferred and the gate still wants it found first.
    """
    chef = ContextChef(
        defer=["github__*"],
        modes={"review": ["github__list_*", "filesystem__read_*"]},
        deferred=DeferredConfig(require_search=True),
    )
    chef.register_catalog(catalogs_dir / "github.json")
    chef.register_catalog(catalogs_dir / "mcp-filesystem.json")
    chef.set_history([user("Triage the issues.")])
    issue = {"owner": "acme", "repo": "app", "title": "Crash on start"}
    use = {"type": "tool_use", "id": "toolu_raw", "name": "github__create_issue", "input": issue}
    stray = raw(  # nothing revealed it: the fake would not script it (`testing._reveals`)
        {
            "id": "msg_raw",
            "type": "message",
            "role": "assistant",
            "model": OPUS,
            "content": [use],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    fake = FakeAnthropic().script(
        text("Looking.", reasoning=""),
        text("Read only.", reasoning=""),
        tool_calls(("github__create_issue", issue), reasoning="")
        if strategy == "anthropic-native"
        else stray,
    )
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))

    def send() -> tuple[dict[str, Any], Any]:
        request = chef.compile(
            "anthropic", model=OPUS, strategy=strategy, extra={"thinking": THINKING}
        )
        calls = chef.ingest(
            client.messages.create(**request.payload, extra_headers=request.headers)
        )
        return request.payload, calls

    send()
    chef.append(user("Review only."))
    chef.set_mode("review")
    send()
    chef.append(user("You may write again."))
    chef.set_mode(None)
    payload, (call,) = send()
    client.close()
    assert fake.violations == ()
    changes = [
        (b["type"], b["tool"].get("name"))
        for m in payload["messages"]
        if m["role"] == "system"
        for b in m["content"]
        if b["type"] in ("tool_addition", "tool_removal")
    ]
    check = chef.check_tool_call(call)
    if strategy == "anthropic-native":  # the server search could surface it: withdrawn,
        assert ("tool_addition", "github__create_issue") in changes  # so offered again
        assert isinstance(check, Allowed), check
    else:  # our search leaves a hidden tool out: never withdrawn, still merely deferred
        assert not [c for c in changes if c[1] == "github__create_issue"]
        assert isinstance(check, Denied) and check.code == "not_loaded", check


def test_compaction_keeps_a_call_with_the_search_that_loaded_its_namespace(
    catalogs_dir: Path,
) -> None:
    """``openai-native`` on `COMPAT` (a mode edits ``tools``):
    one response holds the hosted search and the call.

    Ingest stores that response as one assistant turn (``tool_search_call``,
    ``tool_search_output``, ``function_call``; it was three messages, and
    ``compact(keep_recent_turns=1)`` cut between the search output and the call, so the
    kept call named a namespace, ``github_4``, that only ``tools`` declares): the cut
    keeps the response whole. The next request (an edit) is accepted.
    Then the review mode renumbers the namespaces: ``github_4`` now holds other functions,
    and the call already sent is replayed unchanged (a tools edit keeps the messages), so
    the API refuses it. Expected: the cut keeps a response whole (or the replayed call is
    moved to the namespace that holds it).
    """
    chef = _chef(catalogs_dir, ["github__list_*", "github__get_*", "filesystem__*"])
    chef.set_history([user("Which labels exist?")])
    fake = FakeResponses()
    client = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    first = chef.compile("responses", model=COMPAT, strategy="openai-native")
    namespace = _namespace_of(first.payload, "github__get_label")
    call = _call(1, "github__get_label", namespace["name"])
    fake.script(_response(1, *_hosted_search(1, namespace), call))
    (found,) = chef.ingest(client.responses.create(**first.payload))
    chef.append(tool_results([ToolResult(call_id=found.id, name=found.name, content="bug")]))
    chef.append(user("And the open issues?"))
    chef.compact(lambda _: "Summary: labels were listed.", keep_recent_turns=1)
    kept = [type(p).__name__ for m in chef.history for p in m.parts]
    # the response is one turn, so the cut keeps it whole: the search stays with its call
    assert kept[:4] == ["TextPart", "ProviderPart", "ProviderPart", "ToolCall"], kept
    fake.script(text("Two open issues."), text("Done."))
    second = chef.compile("responses", model=COMPAT, strategy="openai-native")
    chef.ingest(client.responses.create(**second.payload))
    chef.append(user("Review only now."))
    chef.set_mode("review")
    third = chef.compile("responses", model=COMPAT, strategy="openai-native")
    renumbered = [t for t in third.payload["tools"] if t.get("name") == namespace["name"]]
    assert "github__get_label" not in {f["name"] for t in renumbered for f in t["tools"]}
    # the kept search output still declares the call's namespace as loaded: it stays
    (output,) = [i for i in third.payload["input"] if i.get("type") == "tool_search_output"]
    loaded = {(t["name"], f["name"]) for t in output["tools"] for f in t.get("tools", ())}
    assert (namespace["name"], "github__get_label") in loaded
    assert ("github__get_label", namespace["name"]) in _calls(third.payload)
    assert third.edits and third.edits[0].wire_index == 0  # sent again from the start
    with contextlib.suppress(openai.BadRequestError):
        client.responses.create(**third.payload)
    client.close()
    assert fake.violations == ()


def test_a_snapshot_keeps_an_unanswered_edit() -> None:
    """A retry after `restore` reports the edit the failed request carried.

    On ``claude-opus-5-5``: a turn with signed thinking is answered; the host switches
    mode (a ``tools`` edit: every thinking block is stripped) and compiles, the request
    fails; the host snapshots and resumes in a new chef. Without the snapshot the retry
    reports the edit again (`test_an_unanswered_edit_is_decided_again_at_the_retry`);
    so must the restored one (it once had ``edits == ()`` although its ``tools`` and
    messages differ from the last request sent). Taking the mode back after the restore
    undoes the edit, as without the snapshot: the thinking is sent again.
    """

    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: The file.
        """
        return path

    def grep(pattern: str) -> str:
        """Search files.

        Args:
            pattern: What to find.
        """
        return pattern

    def new_chef() -> ContextChef:
        chef = ContextChef(modes={"ro": ["^read_file$"]})
        chef.register_tools([read_file, grep])
        chef.set_system_prompt("S")
        return chef

    chef = new_chef()
    chef.set_history([user("hi")])
    sent = chef.compile("anthropic", model=OPUS)
    thinking = {"type": "thinking", "thinking": "", "signature": "sig_1"}
    chef.ingest(
        {
            "type": "message",
            "role": "assistant",
            "content": [thinking, {"type": "text", "text": "a"}],
        }
    )
    chef.append(user("more"))
    chef.set_mode("ro")
    failed = chef.compile("anthropic", model=OPUS)  # say the request fails
    assert [e.kind for e in failed.edits] == ["tools"]
    assert [e.kind for e in chef.compile("anthropic", model=OPUS).edits] == ["tools"]
    resumed = new_chef()  # the mode was set at run time: the snapshot may narrow
    resumed.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True, narrow=True)
    retry = resumed.compile("anthropic", model=OPUS)
    assert retry.to_json() == failed.to_json()  # the same request...
    assert retry.prefix_fingerprint != sent.prefix_fingerprint  # ...with other tools
    assert '"thinking"' not in retry.to_json()  # and the answered thinking stripped
    assert [e.kind for e in retry.edits] == ["tools"]
    back = new_chef()
    back.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
    for host in (chef, back):
        host.set_mode(None)  # taken back before anything was sent
    undone = back.compile("anthropic", model=OPUS)
    assert undone.edits == ()
    assert undone.to_json() == chef.compile("anthropic", model=OPUS).to_json()
    assert undone.to_json().count('"type":"thinking"') == 1
    assert undone.segments["messages"].startswith(sent.segments["messages"][:-1])


# -- found with --hypothesis-seed=317662029246329678418387253001101145618 --------------------


def _later(path: str) -> str:
    """Write a note (a tool registered after the first request).

    Args:
        path: Where.
    """
    return path


@pytest.mark.parametrize("how", ["mode", "registered"])
def test_a_search_hit_defined_inline_is_not_sent_as_a_tool_reference(
    catalogs_dir: Path, how: str
) -> None:
    """``auto`` (``anthropic-native-client``) on ``claude-opus-5-5``: a tool that was not
    in the first ``tools`` is offered later, and our ``tool_search`` then finds it.

    Everything is deferred but ``filesystem__write_file``, which the starting review mode
    hides (``mode``), or a plain tool is registered after the first request
    (``registered``). On this tool-change model ``tools`` is never edited, so the tool is
    added by definition in a ``tool_addition``, not declared in ``tools``. The search then
    answered with a ``tool_reference`` to it, which the API refuses
    (``tool_reference_unresolved``: a reference in a result must name a tool in
    ``tools``). Expected: that reference left out (the tool is offered by its
    definition), the ones to declared deferred tools kept, every request accepted.
    """
    review = ["^filesystem__read_file$", "^tool_search$", "^github__issue_read$"]
    exposure: dict[str, Any] = {"defer": ["github__*"]}  # ``_later`` comes in offered
    if how == "mode":  # everything deferred but two pins, one hidden by the review mode
        pins = ["^filesystem__read_file$", "filesystem__write*"]
        exposure = {"default_defer": True, "pin": pins, "mode": "review"}
    chef = ContextChef(modes={"review": review}, **exposure)
    chef.register_catalog(catalogs_dir / "github.json")
    chef.register_catalog(catalogs_dir / "mcp-filesystem.json")
    chef.set_history([user("Triage the repository.")])
    found = "filesystem__write_file" if how == "mode" else "_later"
    search = {"tool_names": ["github__issue_write", found]}
    fake = FakeAnthropic().script(
        text("Looking.", reasoning=""),
        tool_calls(("tool_search", search), reasoning=""),
        text("Found them.", reasoning=""),
    )
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    sent: list[Any] = []

    def send() -> None:
        request = chef.compile(
            "anthropic", model=OPUS, strategy="auto", extra={"thinking": THINKING}
        )
        sent.append(request)
        calls = chef.ingest(
            client.messages.create(**request.payload, extra_headers=request.headers)
        )
        if calls:
            chef.append(tool_results([chef.execute(c).result for c in calls]))
        else:
            chef.append(user("Go on."))

    send()
    if how == "mode":
        chef.set_mode(None)
    else:
        chef.register_tools([_later])
    send()
    send()
    client.close()
    assert fake.violations == ()
    first, last = sent[0].payload, sent[-1].payload
    assert last["tools"][: len(first["tools"])] == first["tools"]  # never edited
    assert found not in {t["name"] for t in last["tools"]}  # it came inline
    defined = [
        b["tool"]["definition"]["name"]
        for m in last["messages"]
        if m["role"] == "system"
        for b in m["content"]
        if b["type"] == "tool_addition" and b["tool"]["type"] == "tool_definition"
    ]
    assert found in defined
    references = [
        r["tool_name"]
        for m in last["messages"]
        for b in m["content"]
        if isinstance(b, dict) and b["type"] == "tool_result" and isinstance(b["content"], list)
        for r in b["content"]
        if r["type"] == "tool_reference"
    ]
    assert references == ["github__issue_write"]
    assert [c.kind for c in sent[-1].changes if c.kind == "rewrote_reference"] == [
        "rewrote_reference"
    ]
