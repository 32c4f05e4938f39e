"""Break-it 23: an imported ``tool_result`` whose content is an empty list.

The API refuses ``"content": []`` in a ``tool_result`` (FakeAnthropic's
``anthropic_tool_reference_content``), so a history that holds one cannot have been sent as
it is: `from_anthropic` reads it as an empty result, which the library sends as ``""``.
"""

from __future__ import annotations

import anthropic
import pytest

from contextchef import ContextChef, user
from contextchef.providers import from_anthropic
from contextchef.testing import FakeAnthropic, httpx_for, text


def grep(pattern: str) -> str:
    """Search the code base.

    Args:
        pattern: A regular expression.
    """
    return pattern


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-4-5"])
def test_an_empty_result_list_is_sent_as_an_empty_text(model: str) -> None:
    native = [
        {"role": "user", "content": "find the TODOs"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_A", "name": "grep", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": []}],
        },
    ]
    chef = ContextChef()
    chef.register_tools([grep])
    chef.set_history(from_anthropic(native).messages)
    chef.append(user("go on"))
    payload = chef.compile("anthropic", model=model).payload
    assert payload["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_A",
        "content": "",
    }
    fake = FakeAnthropic().script(text("ok"))
    client = anthropic.Anthropic(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    client.messages.create(**payload)
    assert fake.violations == ()
