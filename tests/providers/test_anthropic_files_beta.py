"""A request whose messages refer to an uploaded file sends the Files API beta.

The Files API pages still require ``anthropic-beta: files-api-2025-04-14``, and the
installed SDK still lists that value, though it has GA twins of the file source types;
the library sent file sources without it. Now a request holding an ``image`` or
``document`` block with a ``file`` source (in a message or a tool result) names it in
``request.headers``, on that request and every later one (the block is replayed), and
`FakeAnthropic` refuses such a source without it. Requests go through the official SDK.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from contextchef import (
    ContextChef,
    MediaPart,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    assistant,
    user,
)
from contextchef.testing import FakeAnthropic, Ids, httpx_for, text

HX = httpx_for(anthropic)
MODEL = "claude-opus-5-5"
FILES_API_BETA = "files-api-2025-04-14"  # the Files API pages' beta header
IDS = Ids()  # one for every fake here: no two replies share a message id


def _turn(chef: ContextChef, **options: Any) -> Any:
    request = chef.compile("anthropic", model=MODEL, **options)
    fake = FakeAnthropic(ids=IDS).script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    chef.ingest(client.messages.create(**request.payload, extra_headers=request.headers))
    assert fake.violations == ()
    return request


def _with_file(media_type: str = "application/pdf") -> ContextChef:
    chef = ContextChef()
    part = MediaPart(media_type=media_type, file_id="file_011CNha8iCJcU1wXNR6q4V8w")
    chef.set_history([Message(role="user", parts=(TextPart(text="read"), part))])
    return chef


@pytest.mark.parametrize("media_type", ["application/pdf", "image/png", "text/plain"])
def test_a_file_source_sends_the_files_beta_on_every_later_request(media_type: str) -> None:
    chef = _with_file(media_type)
    first = _turn(chef)
    block = first.payload["messages"][0]["content"][1]
    assert block["source"] == {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}
    assert first.headers == {"anthropic-beta": FILES_API_BETA}
    chef.append(user("and?"))
    assert _turn(chef).headers == {"anthropic-beta": FILES_API_BETA}


def test_a_tools_file_result_and_other_betas_merge() -> None:
    def fetch(url: str) -> ToolResult:
        """Fetch a document.

        Args:
            url: Where.
        """
        return ToolResult(
            call_id="c1",
            name="fetch",
            content="here",
            media=(MediaPart(media_type="application/pdf", file_id="file_abc"),),
        )

    chef = ContextChef()
    chef.register_tools([fetch])
    chef.set_history([user("get it")])
    call = ToolCall(id="c1", name="fetch", arguments={"url": "u"})
    chef.append(assistant("", [call]))
    chef.run_tools([call])
    request = _turn(chef, betas=["zeta-2026-01-01"])
    assert request.headers == {"anthropic-beta": f"{FILES_API_BETA},zeta-2026-01-01"}


def test_inline_media_send_no_files_beta() -> None:
    chef = ContextChef()
    part = MediaPart(media_type="application/pdf", data="JVBERg==")
    chef.set_history([Message(role="user", parts=(TextPart(text="read"), part))])
    assert _turn(chef).headers == {}


def test_the_fake_refuses_a_file_source_without_the_beta() -> None:
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    doc = {"type": "document", "source": {"type": "file", "file_id": "file_abc"}}
    messages: Any = [{"role": "user", "content": [{"type": "text", "text": "read"}, doc]}]
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model=MODEL, max_tokens=16, messages=messages)
    assert "rule anthropic_file_sources broken: messages.0.content.1.source" in str(refused.value)
    fake.script(text("ok"))
    client.messages.create(
        model=MODEL,
        max_tokens=16,
        messages=messages,
        extra_headers={"anthropic-beta": FILES_API_BETA},
    )
