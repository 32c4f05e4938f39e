"""README's "## MCP servers" example runs as written, against mcp-server-time."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_mcp_servers_example_runs() -> None:
    text = README.read_text("utf-8")
    section = text.split("\n## MCP servers\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"^```python\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    exec(compile(code, str(README), "exec"), {})
