"""The Python examples of the guides run as written.

Every ```python block of the pages in `PAGES` is executed in a fresh namespace; a block
that raises fails its test. The blocks carry their own ``assert`` lines for their visible
results. (These examples were README sections before the docs moved to docs/: "Tool
management" with its strategy table, library-owned tools, announcements and skills, and
"Testing your agent".) README's own quick start runs in test_readme_quickstart.py, the
MCP guide and recipe in tests/live_mcp.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# page -> the fewest blocks it may hold (a block that disappears is an example lost)
PAGES = {
    "guides/gate.md": 1,
    "guides/tool-management.md": 3,
    "guides/library-tools.md": 1,
    "guides/announcements.md": 1,
    "guides/skills.md": 1,
    "guides/testing.md": 8,
    "guides/tool-search.md": 1,  # the semantic ranker: the test extra includes its extra
}


def python_blocks(page: str) -> list[tuple[int, str]]:
    """(line number of the opening fence, code) of each ```python block of `page`."""
    text = (DOCS / page).read_text("utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)]


BLOCKS = [(page, line, code) for page in PAGES for line, code in python_blocks(page)]


def test_every_page_keeps_its_examples() -> None:
    for page, fewest in PAGES.items():
        assert len(python_blocks(page)) >= fewest, page
        text = (DOCS / page).read_text("utf-8")
        assert text.count("```") % 2 == 0, f"{page}: a code fence is not closed"
    testing = (DOCS / "guides/testing.md").read_text("utf-8")
    for sdk in ("anthropic.Anthropic(", "openai.OpenAI(", "genai.Client("):
        assert sdk in testing
    assert "FakeAnthropic" in testing and "reasoning=" in testing
    assert "request.content" in testing  # the raw bytes the SDK sent


@pytest.mark.parametrize(
    ("page", "line", "code"), BLOCKS, ids=[f"docs/{p}:{n}" for p, n, _ in BLOCKS]
)
def test_guide_example_runs(page: str, line: int, code: str) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{Path(page).stem}_{line}"}
    source = "\n" * line + code  # tracebacks point at the page's own line numbers
    exec(compile(source, f"docs/{page}", "exec"), namespace)
    assert "chef" in namespace  # the snippet built its session


ALL_BLOCKS = [
    (page.relative_to(DOCS).as_posix(), line, code)
    for page in sorted(DOCS.rglob("*.md"))
    for line, code in python_blocks(page.relative_to(DOCS).as_posix())
]


@pytest.mark.parametrize(
    ("page", "line", "code"), ALL_BLOCKS, ids=[f"docs/{p}:{n}" for p, n, _ in ALL_BLOCKS]
)
def test_every_docs_example_is_valid_python(page: str, line: int, code: str) -> None:
    """The blocks not run above (they need a session built earlier on their page, a live
    server or a real client) still parse."""
    compile("\n" * line + code, f"docs/{page}", "exec")
