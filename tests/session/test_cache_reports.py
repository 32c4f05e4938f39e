"""One `CacheReport` per ingested response, from every provider's usage (issue 24, item 2).

Real-shaped responses: the final responses recorded from the real APIs in
shared/data/transcripts, sent back by the contextchef.testing fakes through the official SDK
clients (so ingest sees the SDK's own objects), and SDK-typed objects built from the
documented usage and diagnostics fields the recordings do not carry (per-TTL writes, miss
reasons).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from anthropic.types import Message
from google.genai import types as genai_types
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from conftest import examples, shared_data
from contextchef import CacheReport, CompileEvent, ContextChef, assistant, user
from contextchef._json import canonical_dumps
from contextchef.providers import read_response
from contextchef.providers._usage import MAX_TOKENS
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    RawReply,
    httpx_for,
    text,
    tool_calls,
)
from sdk_send import send

HX = httpx_for(anthropic)
OPUS = "claude-opus-5-5"
TOOL = {"name": "lookup", "description": "Look a word up.", "input_schema": {"type": "object"}}
MORE = {"name": "define", "description": "Define a word.", "input_schema": {"type": "object"}}


def recorded(name: str) -> dict[str, Any]:
    """The final response a shared transcript recorded from the real API."""
    data = json.loads((shared_data() / "transcripts" / f"{name}.json").read_text("utf-8"))
    reply: dict[str, Any] = data["final_response"]
    return reply


# (target, fake, recording, expected (input, read, written)) — the figures read by hand
# from each recording's usage object
REAL = [
    ("deepseek", FakeOpenAIChat, "pai-deepseek-reasoner-tools", (976, 896, 0)),
    ("gemini", FakeGemini, "crewai-gemini-research", (727, 375, 0)),
    ("openai", FakeOpenAIChat, "pai-groq-tool-use-failed", (336, 256, 0)),
    ("responses", FakeResponses, "pai-responses-native-tool-search", (590, 0, 0)),
    ("anthropic", FakeAnthropic, "crewai-anthropic-research", (2610, 0, 0)),
]


@pytest.mark.parametrize(("target", "fake_type", "name", "figures"), REAL)
def test_every_providers_recorded_usage_lands_in_one_report_through_its_sdk(
    target: str, fake_type: type[FakeProvider], name: str, figures: tuple[int, int, int]
) -> None:
    reply = recorded(name)
    again = {**reply, "responseId" if target == "gemini" else "id": "second"}
    fake = fake_type().script(RawReply(body=reply), RawReply(body=again))
    chef = ContextChef()
    chef.set_history([user("Look it up.")])
    seen: list[CompileEvent] = []
    chef.on("response:cache", seen.append)
    chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
    (report,) = chef.cache_reports
    assert (report.input_tokens, report.read, report.written) == figures
    assert report.usage and report.target == target and report.missed is None
    assert report.uncached == figures[0] - figures[1] - figures[2]
    assert [e.cache for e in seen] == [report]
    chef.append(user("Again."))
    chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
    assert len(chef.cache_reports) == 2
    assert chef.cache_reports[1].missed == 0  # the same figures: it read what the first left
    assert fake.violations == ()


def test_anthropic_writes_per_ttl_and_its_miss_reason_from_the_sdk_type() -> None:
    body = recorded("crewai-anthropic-research") | {
        "usage": {
            "input_tokens": 50,
            "cache_read_input_tokens": 1200,
            "cache_creation_input_tokens": 900,
            "cache_creation": {"ephemeral_5m_input_tokens": 600, "ephemeral_1h_input_tokens": 300},
            "output_tokens": 7,
        },
        "diagnostics": {
            "cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 400}
        },
    }
    report = read_response(Message.model_validate(body)).cache
    assert (report.input_tokens, report.read, report.written) == (2150, 1200, 900)
    assert report.written_by_ttl == {"1h": 300, "5m": 600}
    assert (report.reason, report.missed, report.miss) == ("messages_changed", 400, True)


def test_responses_writes_per_ttl_and_prompt_cache_diagnostics_from_the_sdk_type() -> None:
    body = recorded("pai-responses-native-tool-search") | {
        "usage": {
            "input_tokens": 5000,
            "input_tokens_details": {
                "cached_tokens": 3000,
                "cache_write_tokens": 1800,
                "cache_write_tokens_details": {"ttl_30m_tokens": 1800, "ttl_12h_tokens": 0},
            },
            "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 5003,
        },
        "prompt_cache_diagnostics": {
            "type": "cache_miss",
            "reason": "tools_changed",
            "cache_missed_tokens": 2500,
            "comparison_reusable_tokens": 4800,
        },
    }
    response = Response.model_validate(body)
    assert response.prompt_cache_diagnostics is not None  # the SDK's own field
    read = read_response(response)
    report = read.cache
    assert (report.input_tokens, report.read, report.written) == (5000, 3000, 1800)
    assert report.written_by_ttl == {"30m": 1800}
    assert (report.reason, report.missed) == ("tools_changed", 2500)
    (notice,) = read.notices  # also a notice, as Anthropic's reasons are
    assert (notice.kind, notice.reason, notice.missed_tokens) == (
        "cache_miss",
        "tools_changed",
        2500,
    )


@pytest.mark.parametrize(
    ("diagnosis", "reason", "missed"),
    [
        ({"type": "cache_hit"}, "", 0),
        ({"type": "comparison_response_not_found"}, "comparison_response_not_found", None),
        ({"type": "unavailable"}, "unavailable", None),
    ],
)
def test_openai_diagnoses_that_are_not_misses(
    diagnosis: dict[str, Any], reason: str, missed: int | None
) -> None:
    body = recorded("pai-responses-native-tool-search") | {"prompt_cache_diagnostics": diagnosis}
    read = read_response(Response.model_validate(body))
    assert (read.cache.reason, read.cache.missed, read.cache.miss) == (reason, missed, False)
    assert read.notices == ()


def test_chat_cache_writes_and_deepseeks_hit_miss_extras_from_the_sdk_type() -> None:
    chat = recorded("crewai-openai-chat-max-usage") | {
        "usage": {
            "prompt_tokens": 2048,
            "completion_tokens": 1,
            "total_tokens": 2049,
            "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 1000},
        }
    }
    report = read_response(ChatCompletion.model_validate(chat)).cache
    assert (report.input_tokens, report.read, report.written) == (2048, 1024, 1000)
    # DeepSeek's fields are not in the SDK's CompletionUsage: they come through as extras
    deepseek = recorded("pai-deepseek-reasoner-tools")
    deepseek["usage"] = {
        "prompt_tokens": 976,
        "completion_tokens": 61,
        "total_tokens": 1037,
        "prompt_cache_hit_tokens": 896,
        "prompt_cache_miss_tokens": 80,
    }
    completion = ChatCompletion.model_validate(deepseek)
    assert completion.usage is not None and completion.usage.prompt_tokens_details is None
    report = read_response(completion).cache
    assert (report.input_tokens, report.read, report.uncached) == (976, 896, 80)


def test_gemini_sdk_object_and_json_dict_read_alike() -> None:
    body = recorded("crewai-gemini-research")
    sdk = genai_types.GenerateContentResponse.model_validate(body)
    assert sdk.usage_metadata is not None and sdk.usage_metadata.cached_content_token_count == 375
    assert read_response(sdk).cache == read_response(body).cache


def test_a_response_without_usage_says_so() -> None:
    chef = ContextChef()
    chef.set_history([user("hi")])
    chef.compile("anthropic")
    chef.ingest({"id": "m1", "type": "message", "role": "assistant", "content": []})
    (report,) = chef.cache_reports
    assert not report.usage and report.input_tokens == 0 and not report.miss


# -- misses: explained by the ledger, or warned about ---------------------------------------


def _anthropic() -> tuple[FakeAnthropic, anthropic.Anthropic, ContextChef]:
    fake = FakeAnthropic().script(text("ok"), text("ok"), text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    chef = ContextChef()
    chef.register_tools([TOOL])
    chef.set_system_prompt("Be brief.")
    chef.set_history([user("Define cache.")])
    return fake, client, chef


def test_a_miss_the_ledger_explains_is_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    fake, client, chef = _anthropic()
    request = chef.compile("anthropic", model=OPUS, strategy="flat")
    chef.ingest(client.messages.create(**request.payload, extra_headers=dict(request.headers)))
    chef.register_tools([MORE])  # the naive way: the tools array changes, an edit
    chef.append(user("And define store."))
    request = chef.compile("anthropic", model=OPUS, strategy="flat", diagnostics=True)
    assert [e.kind for e in request.edits] == ["tools"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        chef.ingest(client.messages.create(**request.payload, extra_headers=dict(request.headers)))
    report = chef.cache_reports[-1]
    assert report.reason == "tools_changed" and report.miss
    assert report.explanation.startswith("tools edit from wire entry 0: ")
    assert request.edits[0].detail in report.explanation
    assert report.unexplained == ""
    assert not any("no edit reported" in r.getMessage() for r in caplog.records)
    assert fake.violations == ()


def test_a_miss_no_edit_explains_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    fake, client, chef = _anthropic()
    request = chef.compile("anthropic", model=OPUS)
    chef.ingest(client.messages.create(**request.payload, extra_headers=dict(request.headers)))
    chef.append(user("And define store."))
    request = chef.compile("anthropic", model=OPUS, diagnostics=True)
    assert request.edits == ()
    sent = request.mutable_payload()
    sent["system"] = "Be very brief."  # changed after compile: the session cannot know
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        chef.ingest(client.messages.create(**sent, extra_headers=dict(request.headers)))
    report = chef.cache_reports[-1]
    assert (report.reason, report.explanation) == ("system_changed", "")
    warned = [r.getMessage() for r in caplog.records if "no edit reported" in r.getMessage()]
    assert len(warned) == 1 and "the provider says system_changed" in warned[0]
    assert fake.violations == ()


def _message(read: int, written: int, name: str) -> Message:
    usage = {
        "input_tokens": 20,
        "output_tokens": 1,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
    }
    content = [{"type": "text", "text": "ok"}]
    return Message.model_validate(
        {"id": name, "type": "message", "role": "assistant", "model": OPUS, "content": content}
        | {"stop_reason": "end_turn", "usage": usage}
    )


def test_without_diagnostics_a_read_below_what_the_last_request_cached_is_a_miss(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chef = ContextChef()
    chef.set_history([user("one")])
    chef.compile("anthropic", model=OPUS)
    chef.ingest(_message(0, 3000, "m1"))  # wrote 3,000
    chef.append(user("two"))
    chef.compile("anthropic", model=OPUS)
    chef.ingest(_message(3000, 40, "m2"))  # read them back
    assert [r.missed for r in chef.cache_reports] == [None, 0]
    chef.append(user("three"))
    chef.compile("anthropic", model=OPUS)
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        chef.ingest(_message(0, 3100, "m3"))  # read nothing: 3,040 were in the cache
    assert chef.cache_reports[-1].missed == 3040
    assert any("missed 3,040 input tokens" in r.getMessage() for r in caplog.records)
    # an edit of what was sent explains the next one
    chef.set_history([user("one, edited"), assistant("ok"), user("four")])
    request = chef.compile("anthropic", model=OPUS)
    assert request.edits
    chef.ingest(_message(0, 3200, "m4"))
    last = chef.cache_reports[-1]
    assert last.missed == 3100 and last.explanation and last.unexplained == ""


def test_reports_are_plain_values() -> None:
    report = CacheReport(input_tokens=10, read=4, written=3, written_by_ttl={"5m": 3})
    assert report.uncached == 3
    assert report.to_dict()["written_by_ttl"] == {"5m": 3}
    assert json.loads(json.dumps(report.to_dict()))["read"] == 4


@pytest.mark.parametrize("target", ["responses", "openai"])
def test_gpt_5_6_reads_and_writes_through_the_fakes_that_report_them(target: str) -> None:
    # the OpenAI fakes model the explicit breakpoints compile places on gpt-5.6: each turn
    # reads what the one before wrote and writes only its own new entries
    fake = (FakeResponses if target == "responses" else FakeOpenAIChat)()
    fake.script(*[text(f"ok {i}") for i in range(4)])
    chef = ContextChef()
    chef.set_system_prompt("Be brief. " * 400)  # above the 1,024-token minimum
    chef.set_history([user("hi")])
    for i in range(4):
        chef.ingest(send(target, fake, chef.compile(target, model="gpt-5.6").payload))
        chef.append(user(f"more {i}"))
    first, *rest = chef.cache_reports
    assert first.read == 0 and first.written == first.input_tokens > 1024
    for before, report in zip(chef.cache_reports, rest, strict=False):
        assert report.read == before.read + before.written  # all of it read back
        assert 0 < report.written < 100 and report.missed == 0 and not report.miss
    if target == "responses":  # per lifetime in the SDK's cache_write_tokens_details
        assert all(r.written_by_ttl == {"30m": r.written} for r in chef.cache_reports)
    assert fake.violations == ()


# -- figures a usage object cannot mean are clamped, on every provider's reader ---------------

COUNT = st.one_of(
    st.integers(min_value=0, max_value=5000),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([True, False, None, "12", 12.0, math.nan, math.inf, 2**53 - 1, 2**53]),
)


def _usage_body(target: str, n: list[Any]) -> dict[str, Any]:
    """A response of `target` (its recorded shape) whose usage holds the figures `n`."""
    if target == "anthropic":
        usage = {
            "input_tokens": n[0],
            "cache_read_input_tokens": n[1],
            "cache_creation_input_tokens": n[2],
            "cache_creation": {
                "ephemeral_5m_input_tokens": n[3],
                "ephemeral_1h_input_tokens": n[4],
            },
        }
        miss = {
            "cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": n[5]}
        }
        return recorded("crewai-anthropic-research") | {"usage": usage, "diagnostics": miss}
    if target == "responses":
        writes = {"ttl_30m_tokens": n[3], "ttl_12h_tokens": n[4]}
        details = {"cached_tokens": n[1], "cache_write_tokens": n[2]}
        usage = {"input_tokens": n[0], "input_tokens_details": details | {"x": 0}}
        usage["input_tokens_details"]["cache_write_tokens_details"] = writes
        diagnosis = {"type": "cache_miss", "reason": "input_changed", "cache_missed_tokens": n[5]}
        return recorded("pai-responses-native-tool-search") | {
            "usage": usage,
            "prompt_cache_diagnostics": diagnosis,
        }
    if target == "openai":
        details = {"cached_tokens": n[1], "cache_write_tokens": n[2]}
        return recorded("pai-groq-tool-use-failed") | {
            "usage": {"prompt_tokens": n[0], "prompt_tokens_details": details}
        }
    if target == "deepseek":
        usage = {"prompt_cache_hit_tokens": n[1], "prompt_cache_miss_tokens": n[2]}
        return recorded("pai-deepseek-reasoner-tools") | {"usage": usage}
    usage = {"promptTokenCount": n[0], "cachedContentTokenCount": n[1]}
    return recorded("crewai-gemini-research") | {"usageMetadata": usage}


def _consistent(report: CacheReport) -> None:
    figures = [report.input_tokens, report.read, report.written, *report.written_by_ttl.values()]
    assert all(type(f) is int and 0 <= f <= MAX_TOKENS for f in figures), report
    assert report.read <= report.input_tokens, report
    assert report.written <= report.input_tokens - report.read, report
    assert all(v > 0 for v in report.written_by_ttl.values()), report
    assert sum(report.written_by_ttl.values()) <= report.written, report
    if report.missed is not None:
        assert 0 <= report.missed <= report.input_tokens, report
    assert report.uncached == report.input_tokens - report.read - report.written


TARGETS = ["anthropic", "responses", "openai", "deepseek", "gemini"]


@settings(max_examples=examples(full=2_000, default=120), deadline=None)
@given(target=st.sampled_from(TARGETS), figures=st.lists(COUNT, min_size=12, max_size=12))
def test_every_readers_report_is_consistent_whatever_the_usage_holds(
    target: str, figures: list[Any]
) -> None:
    # two responses in a row: the second report is also completed from the first
    chef = ContextChef()
    chef.set_history([user("Look it up.")])
    for i, n in enumerate((figures[:6], figures[6:])):
        chef.compile(target, model="m")
        body = _usage_body(target, n) | {"id": f"r{i}", "responseId": f"r{i}"}
        _consistent(read_response(body).cache)
        chef.ingest(body)
        _consistent(chef.cache_reports[-1])
        chef.append(user("Again."))


# (input, read, written, 5m/30m, 1h/12h, missed) -> the report's (input, read, written)
SKEWED = [
    ((10, 10**30, 0, 0, 0, 5), (10, 0, 0)),  # a read past any count: absent
    ((10, 25, 7, 7, 0, 99), (10, 10, 0)),  # more read than input: all of it read
    ((100, 40, 90, 80, 30, -1), (100, 40, 60)),  # writes past what is left
]


@pytest.mark.parametrize("target", ["responses", "openai", "anthropic", "gemini"])
@pytest.mark.parametrize(("figures", "expected"), SKEWED)
def test_skewed_usage_through_the_sdk_gives_reports_within_the_input(
    target: str, figures: tuple[Any, ...], expected: tuple[int, int, int]
) -> None:
    fakes: dict[str, Callable[[], FakeProvider]] = {
        "responses": FakeResponses,
        "openai": FakeOpenAIChat,
        "anthropic": FakeAnthropic,
        "gemini": FakeGemini,
    }
    bodies = [
        _usage_body(target, list(figures)) | {"id": f"r{i}", "responseId": f"r{i}"}
        for i in range(3)
    ]
    fake = fakes[target]().script(*[RawReply(body=b) for b in bodies])
    chef = ContextChef()
    chef.set_history([user("Look it up.")])
    for turn in range(3):
        chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
        chef.append(user(f"Again {turn}."))
    for report in chef.cache_reports:
        _consistent(report)
    assert all(n.missed_tokens is None or n.missed_tokens >= 0 for n in chef.notices)
    first = chef.cache_reports[0]
    if target in ("responses", "openai"):
        assert (first.input_tokens, first.read, first.written) == expected
    elif target == "gemini":  # no writes on Gemini
        assert (first.input_tokens, first.read) == expected[:2]
    else:  # Anthropic's input is its three figures summed: a read is never past it
        assert first.read == (0 if figures[1] > MAX_TOKENS else figures[1])
    assert fake.violations == ()


# -- misses the session can explain itself (breakit2 r_model_switch_miss_notice) -------------


def _lookup(word: str) -> str:
    """Look a word up in the glossary."""
    return f"{word}: " + "a glossary line. " * 150


def _loop(target: str) -> tuple[FakeProvider, ContextChef]:
    fake = (FakeResponses if target == "responses" else FakeOpenAIChat)()
    fake.script(
        *[t for k in range(12) for t in (tool_calls(("_lookup", {"word": f"w{k}"})), text("ok"))]
    )
    chef = ContextChef()
    chef.register_tools([_lookup])
    chef.set_system_prompt("You are a glossary assistant. " * 150)
    chef.set_history([user("Define cache.")])
    return fake, chef


def _turn(target: str, fake: FakeProvider, chef: ContextChef, model: str, **options: Any) -> None:
    """One tool loop (the call, then the answer to its result) and the next user message."""
    for _ in range(2):
        request = chef.compile(target, model=model, strategy="flat", **options)
        chef.run_tools(chef.ingest(send(target, fake, request.payload)))
    chef.append(user("And the next word?"))


def _misses_explained(chef: ContextChef, caplog: pytest.LogCaptureFixture) -> CacheReport:
    """The last report: a miss, explained, and no unexplained-miss warning logged."""
    report = chef.cache_reports[-1]
    assert report.miss and report.explanation and report.unexplained == ""
    assert not any("no edit reported" in r.getMessage() for r in caplog.records)
    return report


@pytest.mark.parametrize("target", ["responses", "openai"])
def test_a_model_switch_explains_its_miss(target: str, caplog: pytest.LogCaptureFixture) -> None:
    fake, chef = _loop(target)
    for model in ("gpt-5.6", "gpt-5.6", "gpt-5.7", "gpt-5.7"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="contextchef"):
            _turn(target, fake, chef, model)
        if model == "gpt-5.7" and chef.cache_reports[-3].model == "gpt-5.6":
            switched = chef.cache_reports[-2]  # the first request on the new model
            assert switched.miss and switched.read == 0 and switched.model == "gpt-5.7"
            assert "model changed from 'gpt-5.6' to 'gpt-5.7'" in switched.explanation
            assert not any("no edit reported" in r.getMessage() for r in caplog.records)
    # steady turns on one model explain nothing: nothing missed
    assert [r.explanation for r in chef.cache_reports[-1:]] == [""]
    assert not chef.cache_reports[-1].miss
    assert fake.violations == ()


@pytest.mark.parametrize("target", ["responses", "openai"])
def test_system_tools_and_cut_edits_explain_their_miss(
    target: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake, chef = _loop(target)
    for _ in range(2):
        _turn(target, fake, chef, "gpt-5.6")
    changes = {
        "system": lambda: chef.set_system_prompt("You are a terse glossary assistant. " * 150),
        "tools": lambda: chef.register_tools([TOOL]),
        "history ": lambda: chef.set_history(  # an edit of message 3
            [*chef.history[:3], user("Edited."), *chef.history[4:]]
        ),
        "history": lambda: chef.set_history(list(chef.history)[4:]),  # a cut of the start
    }
    for kind, change in changes.items():
        change()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="contextchef"):
            request = chef.compile(target, model="gpt-5.6", strategy="flat")
            chef.run_tools(chef.ingest(send(target, fake, request.payload)))
        report = _misses_explained(chef, caplog)
        assert f"{kind.strip()} edit from wire entry" in report.explanation, report.explanation
        if kind.startswith("history"):  # which entry and which byte of the messages segment
            (edit,) = request.edits
            where = f"wire entry {edit.wire_index}, byte "
            assert where in report.explanation
            byte = int(report.explanation.split(where)[1].split(" ")[0].replace(",", ""))
            segment = request.segments["messages"]
            entry = json.loads(segment)[edit.wire_index]
            assert segment.encode()[byte:].startswith(canonical_dumps(entry).encode())
            assert (edit.wire_index == 0) is (kind == "history")  # the cut: from the start;
            # the edit of message 3: from the entry before it
        _turn(target, fake, chef, "gpt-5.6")
    assert fake.violations == ()


def test_a_turn_gap_past_the_caches_lifetime_explains_the_expired_cache(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Chat Completions keeps a write 30 minutes at most: an hour apart, the cache is gone
    # (a fresh fake stands for the expired cache: the fakes have no clock)
    fake, chef = _loop("openai")
    _turn("openai", fake, chef, "gpt-5.6", turn_gap=3600)
    later = FakeOpenAIChat().script(text("ok"))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        chef.ingest(
            send("openai", later, chef.compile("openai", model="gpt-5.6", turn_gap=3600).payload)
        )
    report = _misses_explained(chef, caplog)
    assert "expects 3,600 s between requests" in report.explanation
    assert "(30m, 1,800 s)" in report.explanation
    # Responses asks for the 12-hour lifetime then: no expiry to explain
    fake, chef = _loop("responses")
    _turn("responses", fake, chef, "gpt-5.6", turn_gap=3600)
    assert all(r.explanation == "" for r in chef.cache_reports)
