"""Send a payload through the official SDK client of its target, against a fake (tests).

One helper for the test modules that run a turn through ``anthropic``, ``openai`` and
``google-genai`` clients pointed at a `contextchef.testing` fake.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types as genai_types

from contextchef.testing import FakeProvider, httpx_for

HX = httpx_for(anthropic)


def send(
    target: str,
    fake: FakeProvider,
    payload: dict[str, Any],
    headers: Mapping[str, str] | None = None,
) -> Any:
    """`payload` through the official SDK of `target`; the SDK's response object.

    `headers` (a request's ``headers``) go as the Anthropic call's ``extra_headers``.
    """
    if target in ("gemini", "gemini-interactions"):
        http = genai_types.HttpOptions(httpx_client=fake.http_client(HX))
        client = genai.Client(api_key="x", http_options=http)
        if target == "gemini-interactions":
            return client.interactions.create(**payload)
        return client.models.generate_content(**payload)
    if target == "anthropic":
        client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
        return client.messages.create(**payload, extra_headers=dict(headers or {}))
    chat = openai.OpenAI(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    if target == "responses":
        return chat.responses.create(**payload)
    return chat.chat.completions.create(**payload)
