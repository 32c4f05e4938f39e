"""First and steady compile with 10,051 deferred tools, against what the SDK call costs.

breakit3 (t29) saw ~12 s to compile and send one Responses request with 10,051 tools.
This script splits that time: the session's tool view (built once per catalog), our
first compile (the tools rendered and serialized once), a later compile (the rendered
prefix reused), and, as baselines measured in the same run on the same payload,
``json.dumps`` of the payload and the OpenAI SDK's own request preparation
(``openai._utils.maybe_transform`` into ``ResponseCreateParams``, which
``client.responses.create`` runs on every call before anything is sent).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from contextchef import ContextChef, assistant, user

N = 10_051


def catalog() -> list[dict[str, Any]]:
    return [
        {
            "name": f"tool_{i}",
            "description": f"Does thing number {i}.",
            "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        }
        for i in range(N)
    ]


def ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def sdk_transform_ms(payload: dict[str, Any]) -> float:
    from openai._utils import maybe_transform
    from openai.types.responses import response_create_params as params

    return ms(lambda: maybe_transform(payload, params.ResponseCreateParamsNonStreaming))


def measure(strategy: str) -> dict[str, float]:
    chef = ContextChef(default_defer=True)
    chef.register_tools(catalog())
    chef.set_history([user("hi")])
    view = ms(lambda: chef.view)
    first = ms(lambda: chef.compile("responses", model="gpt-5.5", strategy=strategy))
    chef.append(assistant("ok"), user("more"))
    steady = ms(lambda: chef.compile("responses", model="gpt-5.5", strategy=strategy))
    payload = chef.compile("responses", model="gpt-5.5", strategy=strategy).payload
    dumps = statistics.median(ms(lambda: json.dumps(payload)) for _ in range(3))
    return {
        "view": view,
        "first": first,
        "steady": steady,
        "dumps": dumps,
        "sdk": sdk_transform_ms(payload),
        "tools": len(payload.get("tools", [])),
    }


def main() -> None:
    print(
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, {os.cpu_count()} cores."
    )
    print("Command: `python benchmarks/large_catalog.py`.\n")
    print(
        "| strategy | tools entries | view ms | first compile ms (x dumps) | "
        "steady compile ms | json.dumps ms | SDK transform ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for strategy in ("openai-native", "openai-native-client", "client"):
        m = measure(strategy)
        print(
            f"| {strategy} | {m['tools']:.0f} | {m['view']:.0f} | {m['first']:.0f} "
            f"({m['first'] / m['dumps']:.1f}x) | {m['steady']:.1f} | {m['dumps']:.1f} | "
            f"{m['sdk']:.0f} |"
        )


if __name__ == "__main__":
    main()
