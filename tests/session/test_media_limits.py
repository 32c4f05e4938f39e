"""Media over an API's size or count limit are sent as reported text notes, never as blocks.

Break-it 37 #4: a 6 MB screenshot and 111 screenshots over 12 turns went to Anthropic as
``image`` blocks (the API takes at most 5 MB per image and 100 images per request), with
``changes == ()``; since what was sent is replayed, every later request would be refused
too. The limits are each wire's data (`MediaRules.limits`); a request counts what it
already carries (sent, so replayed as it is) before its new media. Each request goes
through the official SDK client against the target's fake, which refuses what the API
refuses (`contextchef.testing._media_limits`).
"""

from __future__ import annotations

import base64
from typing import Any

from contextchef import ContextChef, MediaPart, Message, TextPart, ToolResult, user
from contextchef.testing import Ids, fake_for, text, tool_calls
from sdk_send import send

IDS = Ids()
PNG = base64.b64encode(
    base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
).decode()
BIG = base64.b64encode(base64.b64decode(PNG) + b"\0" * (6 * 1024 * 1024)).decode()  # 6 MB


def _note(why: str, kind: str = "image/png") -> str:
    return f"[{kind} attachment not shown (inline data): {why}]"


def screenshot(name: str) -> ToolResult:
    """Take a screenshot of the page.

    Args:
        name: What to call it.
    """
    data = BIG if name == "big" else PNG
    return ToolResult(
        call_id="",
        name="screenshot",
        content=f"shot {name}",
        media=(MediaPart(media_type="image/png", data=data),),
    )


def _chef() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([screenshot])
    return chef


def _images(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b
        for m in payload["messages"]
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
        for b in block.get("content") or ()
        if isinstance(b, dict) and b.get("type") == "image"
    ]


def _plain(value: Any) -> Any:
    """`value` without its per-request ``cache_control`` marks."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    return [_plain(v) for v in value] if isinstance(value, list) else value


def _turn(chef: ContextChef, fake: Any, sent: list[dict[str, Any]]) -> Any:
    """One request for Claude through the SDK; the tools it calls are run. The request."""
    request = chef.compile("anthropic", model="claude-sonnet-4-5")
    if sent:  # append-only: the last request's messages are replayed as they were sent
        last = sent[-1]["messages"]
        assert _plain(request.payload["messages"][: len(last)]) == last
    sent.append(_plain(request.payload))
    chef.run_tools(chef.ingest(send("anthropic", fake, request.mutable_payload())))
    assert fake.violations == ()
    return request


def test_screenshots_over_5_mb_and_past_100_images_are_notes_across_a_restore() -> None:
    chef = _chef()
    chef.set_history([user("Take screenshots.")])
    fake = fake_for("anthropic", ids=IDS)
    fake.script(tool_calls(("screenshot", {"name": "big"})))
    for i in range(15):  # 15 turns of 7 parallel screenshots: 105 images
        fake.script(tool_calls(*[("screenshot", {"name": f"s{i}_{j}"}) for j in range(7)]))
    fake.script(text("done"))
    sent: list[dict[str, Any]] = []
    requests = [_turn(chef, fake, sent) for _ in range(9)]  # the big one, 8 turns of 7

    (big,) = _plain(requests[1].payload["messages"][-1]["content"])
    too_large = f"{len(BIG):,} bytes, over the API's limit of 5,242,880 bytes for one image"
    assert big == {
        "type": "tool_result",
        "tool_use_id": big["tool_use_id"],
        "content": f"shot big\n\n{_note(too_large)}",
    }
    assert [c.detail for c in requests[1].changes] == [
        f"message 2: the result of call {big['tool_use_id']!r} held image/png (data), "
        f"{too_large}, which the API would refuse; sent as a text note"
    ]
    assert len(_images(sent[-1])) == 49

    restored = _chef()  # another worker takes the conversation over
    restored.restore(chef.snapshot(), allow_unsigned=True)
    assert restored.compile("anthropic", model="claude-sonnet-4-5").payload == (
        chef.compile("anthropic", model="claude-sonnet-4-5").payload
    )
    requests = [_turn(restored, fake, sent) for _ in range(8)]  # 7 turns of 7, then "done"

    assert [len(_images(p)) for p in sent] == [0, 0, *range(7, 99, 7), 100]
    last = requests[-1]
    results = _plain(last.payload["messages"][-1]["content"])
    assert [r["content"] for r in results[:2]] == [
        [
            {"type": "text", "text": f"shot s14_{j}"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ]
        for j in range(2)
    ]
    over = "over the API's limit of 100 images in one request"
    assert [r["content"] for r in results[2:]] == [
        f"shot s14_{j}\n\n{_note(over)}" for j in range(2, 7)
    ]
    index = len(last.payload["messages"]) - 1
    assert [c.detail for c in last.changes] == [
        f"message {index}: the result of call {r['tool_use_id']!r} held image/png (data), "
        f"{over}, which the API would refuse; sent as a text note"
        for r in results[2:]
    ]
    assert last.payload["messages"][-2]["role"] == "assistant" and len(sent) == 17


def _user_images(n: int, data: str = PNG, kind: str = "image/png") -> Message:
    media = tuple(MediaPart(media_type=kind, data=data) for _ in range(n))
    return Message(role="user", parts=(TextPart(text="look"), *media))


def test_the_anthropic_request_keeps_its_media_within_32_mb() -> None:
    data = "A" * 4_500_000  # under 5 MB each; 8 of them are 36 MB
    chef = ContextChef()
    chef.set_history([_user_images(8, data)])
    fake = fake_for("anthropic", ids=IDS)
    request = chef.compile("anthropic", model="claude-sonnet-4-5")
    fake.script(text("ok"))
    chef.ingest(send("anthropic", fake, request.mutable_payload()))
    assert fake.violations == ()
    blocks = _plain(request.payload["messages"][0]["content"])
    assert [b["type"] for b in blocks] == ["text"] + ["image"] * 7 + ["text"]
    why = (
        "4,500,000 bytes, past the API's limit of 32,000,000 bytes of inline media in one "
        "request (31,500,000 carried already)"
    )
    assert blocks[-1] == {"type": "text", "text": _note(why)}
    assert [c.kind for c in request.changes] == ["media_as_text"]


def _ask(target: str, model: str, chef: ContextChef) -> Any:
    request = chef.compile(target, model=model)
    fake = fake_for(target, ids=IDS).script(text("ok"))
    chef.ingest(send(target, fake, request.mutable_payload(), request.headers))
    assert fake.violations == ()
    return request


def test_chat_counts_the_images_already_sent_before_new_ones() -> None:
    chef = ContextChef()
    chef.set_history([_user_images(300)])
    first = _ask("openai", "gpt-5.5", chef)
    assert first.changes == ()
    chef.append(_user_images(300))
    second = _ask("openai", "gpt-5.5", chef)
    sent = second.payload["messages"]
    assert sent[:2] == first.payload["messages"] + sent[1:2]  # the first turn as it was sent
    parts = sent[-1]["content"]
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    note = {"type": "text", "text": _note("over the API's limit of 500 images in one request")}
    assert parts == [{"type": "text", "text": "look"}, *[image] * 200, *[note] * 100]
    assert len(second.changes) == 100


def test_chat_keeps_the_image_bytes_of_a_request_within_50_mb() -> None:
    chef = ContextChef()
    chef.set_history([_user_images(3, "A" * 17_000_000)])
    request = _ask("openai", "gpt-5.5", chef)
    kinds = [p["type"] for p in request.payload["messages"][0]["content"]]
    assert kinds == ["text", "image_url", "image_url", "text"]
    why = (
        "17,000,000 bytes, past the API's limit of 50,000,000 bytes of images in one request "
        "(34,000,000 carried already)"
    )
    assert request.payload["messages"][0]["content"][-1]["text"] == _note(why)


def test_responses_notes_a_tools_image_over_20_mb() -> None:
    huge = "A" * 20_000_004

    def camera(name: str) -> ToolResult:
        """Take a photo.

        Args:
            name: What to call it.
        """
        return ToolResult(
            call_id="",
            name="camera",
            content="photo",
            media=(MediaPart(media_type="image/png", data=huge),),
        )

    chef = ContextChef()
    chef.register_tools([camera])
    chef.set_history([user("Take a photo.")])
    fake = fake_for("responses", ids=IDS)
    fake.script(tool_calls(("camera", {"name": "a"})), text("done"))
    first = chef.compile("responses", model="gpt-5.5")
    chef.run_tools(chef.ingest(send("responses", fake, first.mutable_payload())))
    second = chef.compile("responses", model="gpt-5.5")
    chef.ingest(send("responses", fake, second.mutable_payload()))
    assert fake.violations == ()
    why = "20,000,004 bytes, over the API's limit of 20,000,000 bytes for one image"
    assert second.payload["input"][-1]["output"] == f"photo\n\n{_note(why)}"
    assert len(second.changes) == 1 and why in second.changes[0].detail


def test_gemini_notes_a_pdf_over_50_mb_and_images_past_3600() -> None:
    chef = ContextChef()
    pdf = MediaPart(media_type="application/pdf", data="A" * 50_000_004)
    chef.set_history([Message(role="user", parts=(TextPart(text="read"), pdf))])
    first = _ask("gemini", "gemini-3-pro", chef)
    why = "50,000,004 bytes, over the API's limit of 50,000,000 bytes for one PDF"
    assert first.payload["contents"][0]["parts"] == [
        {"text": "read"},
        {"text": _note(why, "application/pdf")},
    ]
    chef.append(_user_images(1_800))
    assert _ask("gemini", "gemini-3-pro", chef).changes == ()
    chef.append(_user_images(1_801))
    third = _ask("gemini", "gemini-3-pro", chef)
    parts = third.payload["contents"][-1]["parts"]
    assert parts[-2] == {"inline_data": {"mime_type": "image/png", "data": PNG}}
    assert parts[-1] == {"text": _note("over the API's limit of 3,600 images in one request")}
    assert len(third.changes) == 1


def test_one_image_repeated_in_a_result_is_counted_each_time() -> None:
    image = MediaPart(media_type="image/png", data=PNG)

    def album(name: str) -> ToolResult:
        """Show an album.

        Args:
            name: Which.
        """
        return ToolResult(call_id="", name="album", content="album", media=(image,) * 101)

    chef = ContextChef()
    chef.register_tools([album])
    chef.set_history([user("Show it.")])
    fake = fake_for("anthropic", ids=IDS)
    fake.script(tool_calls(("album", {"name": "a"})), text("done"))
    sent: list[dict[str, Any]] = []
    _turn(chef, fake, sent)
    request = _turn(chef, fake, sent)
    (result,) = _plain(request.payload["messages"][-1]["content"])
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    note = _note("over the API's limit of 100 images in one request")
    assert result["content"] == [{"type": "text", "text": f"album\n\n{note}"}, *[block] * 100]
    assert len(request.changes) == 1
