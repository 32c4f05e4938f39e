"""Summarizer calls of local compaction over a 40-turn session, by context budget.

Run:  python benchmarks/compaction_calls.py [--turns 40] [--budgets 1200,4000,32000]

The session (the one in tests/session/test_compaction_headroom.py): ``ContextPolicy(
native=False, budget_tokens=B, output_reserve=0)`` with an ``on_overflow`` summarizer
returning one short sentence, the system prompt "You are terse.", and per turn a user
message of about 150 tokens (mixed scripts) and a reply of about 200, sent through the
official SDK client to the `contextchef.testing` fake (which reports input tokens). The
figure is a count, not a time: how many turns paid the summarizer, and the largest
request the fake counted. For the figures before a change, run it with
``PYTHONPATH=<that version's src>`` (e.g. ``git archive <commit> src | tar -x -C /tmp/x``).
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys

import anthropic
import openai

from contextchef import ContextChef, ContextPolicy, estimate_tokens, user
from contextchef.testing import FakeProvider, fake_for, httpx_for, text

MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}


def _send(target: str, fake: FakeProvider, payload: dict[str, object]) -> tuple[object, int]:
    """The reply to `payload` and the input tokens the provider counted for it."""
    if target == "anthropic":
        client = anthropic.Anthropic(
            api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
        )
        data = client.messages.create(**payload).model_dump(mode="json", exclude_none=True)  # type: ignore[arg-type]
        data["usage"] = {**data["usage"], "input_tokens": estimate_tokens(str(payload)) + 40}
        return data, data["usage"]["input_tokens"]  # the fake reports none: a provider's count
    chat = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    reply = chat.chat.completions.create(**payload)  # type: ignore[call-overload]
    return reply, reply.usage.prompt_tokens


def run(target: str, budget: int, turns: int) -> tuple[list[int], int]:
    """(turns that called the summarizer, the largest request's input tokens as counted)."""
    called: list[int] = []
    turn = 0

    def summarize(transcript: str) -> str:
        called.append(turn)
        return f"Summary {len(called)}: the user asks about mixed scripts."

    policy = ContextPolicy(native=False, budget_tokens=budget, output_reserve=0)
    chef = ContextChef(on_overflow=summarize, context_policy=policy, volatile_lint="off")
    chef.set_system_prompt("You are terse.")
    fake = fake_for(target).script(*[text(f"A{i} " + "x" * 800) for i in range(turns)])
    largest = 0
    for turn in range(turns):
        chef.append(user(f"Q{turn} 请解释这个问题 with mixed 🧪 scripts. " + "y" * 500))
        payload = chef.compile(target, model=MODELS[target]).payload
        reply, counted = _send(target, fake, payload)
        chef.ingest(reply)
        largest = max(largest, counted)
    assert not fake.violations, fake.violations
    return called, largest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--budgets", default="1200,4000,32000")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the edits a compaction reports, once per compaction
    print(f"{platform.platform()} Python {sys.version.split()[0]}; {args.turns} turns")
    print("| target | budget | trigger | summarizer calls | turns that called | largest request |")
    print("|---|---:|---:|---:|---|---:|")
    for target in MODELS:
        for budget in map(int, args.budgets.split(",")):
            called, largest = run(target, budget, args.turns)
            shown = ", ".join(map(str, called[:12])) + (" ..." if len(called) > 12 else "")
            trigger = budget * 4 // 5
            print(
                f"| {target} | {budget:,} | {trigger:,} | {len(called)} | {shown} | {largest:,} |"
            )


if __name__ == "__main__":
    main()
