"""The README and the docs site keep their shape (issue 22, item 8).

README: at most 400 lines, the two set-up commands verbatim, no private module named.
docs/: every page is in mkdocs.yml's nav, and the API reference documents every name
`contextchef.__all__` exports. (`mkdocs build --strict` itself runs in .ci/run, with the
``docs`` extra.)
"""

from __future__ import annotations

import re
from pathlib import Path

import contextchef

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text("utf-8")
MAIN = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && contextchef plan"
TESTS = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && pytest'
PRIVATE = re.compile(r"\bcontextchef(?:\.\w+)*\._\w+|\b_[a-z]\w*\.py\b|/_[a-z]\w*")


def test_readme_is_short_and_has_the_two_commands() -> None:
    assert len(README.splitlines()) <= 400
    assert f"```bash\n{MAIN}\n```" in README
    assert f"```bash\n{TESTS}\n```" in README
    assert TESTS in (REPO / ".ci" / "run").read_text("utf-8")


def test_readme_names_no_private_module() -> None:
    assert PRIVATE.findall(README) == []


def test_every_docs_page_is_in_the_nav() -> None:
    nav = set(re.findall(r":\s+(\S+\.md)\s*$", (REPO / "mkdocs.yml").read_text("utf-8"), re.M))
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert pages == nav


def test_the_api_reference_covers_the_public_surface() -> None:
    documented: set[str] = set()
    for page in (REPO / "docs" / "reference").glob("*.md"):
        documented |= set(re.findall(r"^::: ([\w.]+)\s*$", page.read_text("utf-8"), re.M))
    names = {f"contextchef.{name}" for name in contextchef.__all__}
    assert sorted(names - documented) == []
    for package in ("contextchef.testing", "contextchef.mcp"):
        assert package in documented


def error_tree() -> str:
    """The ContextChefError tree drawn from the code, as docs/guides/errors.md draws it."""
    errors = [getattr(contextchef, n) for n in contextchef.__all__]
    errors = [e for e in errors if isinstance(e, type) and issubclass(e, BaseException)]
    lines: list[str] = []

    def walk(cls: type, depth: int) -> None:
        also = [
            b.__name__ for b in cls.__bases__ if not issubclass(b, contextchef.ContextChefError)
        ]
        note = f" (also {', '.join(also)})" if depth and also else ""
        lines.append("  " * depth + cls.__name__ + note)
        for sub in sorted((e for e in errors if cls in e.__bases__), key=lambda e: e.__name__):
            walk(sub, depth + 1)

    walk(contextchef.ContextChefError, 0)
    return "\n".join(lines)


def test_the_errors_guide_draws_the_real_tree() -> None:
    guide = (REPO / "docs" / "guides" / "errors.md").read_text("utf-8")
    (drawn,) = re.findall(r"^```text\n(ContextChefError\n.*?)\n```$", guide, re.M | re.S)
    assert drawn == error_tree()
