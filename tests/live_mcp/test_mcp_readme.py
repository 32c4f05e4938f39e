"""The MCP guide's example (README's "## MCP servers" before the docs moved to docs/)
runs as written, against mcp-server-time."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "mcp.md"


def test_the_mcp_servers_example_runs() -> None:
    text = GUIDE.read_text("utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    exec(compile(code, str(GUIDE), "exec"), {})
