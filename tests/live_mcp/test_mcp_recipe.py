"""docs/recipes/mcp-session-sync.md: its worker runs as written, in two processes.

The recipe's only ```python block is `worker.py`. Each turn runs it in a fresh Python
process (``runpy`` as ``__main__``, the command line the recipe shows) against one SQLite
store and a real mcp-server-time, with ``anthropic.Anthropic`` pointed at a
`FakeAnthropic` scripted for that process's turn. The second process must continue the
first one's conversation: its request carries the first turn's MCP call and result.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from contextchef import payload_break

RECIPE = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "mcp-session-sync.md"
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}

# Runs in the child: script the fake, point the SDK at it, run worker.py as __main__,
# then write what the fake received next to the store.
RUNNER = textwrap.dedent(
    """
    import functools, json, runpy, sys
    import anthropic
    from contextchef.testing import FakeAnthropic, httpx_for, text, tool_calls

    turns, out = json.loads(sys.argv[1]), sys.argv[2]
    fake = FakeAnthropic().script(
        *[text(t) if isinstance(t, str) else tool_calls(*map(tuple, t)) for t in turns]
    )
    http = fake.http_client(httpx_for(anthropic))
    anthropic.Anthropic = functools.partial(
        anthropic.Anthropic, api_key="x", max_retries=0, http_client=http
    )
    sys.argv = ["worker.py", *sys.argv[3:]]
    runpy.run_path("worker.py", run_name="__main__")
    with open(out, "w") as f:
        json.dump({"violations": [v.message for v in fake.violations],
                   "pending": fake.pending,
                   "bodies": [r.body for r in fake.requests]}, f)
    """
)


def worker_code() -> str:
    text = RECIPE.read_text("utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    return code


def run_turn(tmp: Path, n: int, turns: list[Any], question: str) -> tuple[str, dict[str, Any]]:
    out = tmp / f"turn{n}.json"
    args = [json.dumps(turns), str(out), "sessions.db", "conv-42", question]
    done = subprocess.run(
        [sys.executable, "runner.py", *args],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), json.loads(out.read_text("utf-8"))


def test_the_recipe_worker_continues_a_conversation_in_another_process(tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text(worker_code(), "utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, "utf-8")
    first_turns = [[["mcp-time__convert_time", CONVERT]], "21:00 in Tokyo."]
    answer, first = run_turn(tmp_path, 1, first_turns, "Noon UTC in Tokyo?")
    assert answer == "21:00 in Tokyo."
    assert first["violations"] == [] and first["pending"] == 0 and len(first["bodies"]) == 2
    result = first["bodies"][1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "+9.0h" in json.dumps(result).replace(" ", "")

    answer, second = run_turn(tmp_path, 2, ["Yes, the same day."], "Same day?")
    assert answer == "Yes, the same day."
    assert second["violations"] == [] and second["pending"] == 0
    (body,) = second["bodies"]
    # the second process's request extends the first process's last one, byte for byte
    # as the prompt cache reads it (the moving cache_control marker aside)
    assert payload_break(first["bodies"][1], body) is None
    assert "mcp-time__convert_time" in json.dumps(body["messages"][1])
    assert body["messages"][-1]["content"][-1]["text"] == "Same day?"
