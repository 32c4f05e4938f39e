"""The Python examples of README's "## Tool management" and "## Testing your agent"
sections run as written.

Every ```python block between one of those headings and the next "## " heading is
executed in a fresh namespace; a block that raises fails its test. The blocks carry
their own ``assert`` lines for their visible results.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SECTIONS = ("## Tool management", "## Testing your agent")
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def section_text(heading: str = SECTIONS[0]) -> str:
    text = README.read_text("utf-8")
    start = text.find(f"\n{heading}\n")
    if start < 0:
        pytest.fail(f"README.md has no {heading!r} section")
    body = text[start + len(heading) + 2 :]
    end = re.search(r"^## ", body, re.MULTILINE)
    return body[: end.start()] if end else body


def python_blocks() -> list[tuple[int, str]]:
    """(line number of the opening fence in README.md, code) of each block of the sections."""
    text = README.read_text("utf-8")
    blocks = []
    for heading in SECTIONS:
        section = section_text(heading)
        offset = text.count("\n", 0, text.find(section))
        blocks += [
            (offset + section.count("\n", 0, m.start()) + 1, m.group(1))
            for m in FENCE.finditer(section)
        ]
    return blocks


BLOCKS = python_blocks()


def test_section_has_examples() -> None:
    assert len(BLOCKS) >= 5
    assert "FakeAnthropic" in section_text("## Testing your agent")
    assert "### Library-owned tools" in section_text()
    assert "### Announcements and state" in section_text()


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"README.md:{n}" for n, _ in BLOCKS])
def test_tool_management_example_runs(line: int, code: str) -> None:
    namespace: dict[str, object] = {"__name__": f"readme_line_{line}"}
    source = "\n" * line + code  # tracebacks point at README.md's own line numbers
    exec(compile(source, "README.md", "exec"), namespace)
    assert "chef" in namespace  # the snippet built its session
