"""Every CLI file loader answers bad input with one ``error: ...`` line and exit code 2.

Regression (breakit1 s9): JSON nested thousands of levels deep crashed ``replay`` and
``diff`` with an uncaught RecursionError and a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextchef.cli import app

runner = CliRunner()
DEMO = Path(__file__).parents[2] / "src" / "contextchef" / "data" / "demo_catalog.json"


def _deep(tmp_path: Path, depth: int) -> Path:
    path = tmp_path / f"deep{depth}.json"
    inner = "[" * depth + "]" * depth
    path.write_text('{"messages": [{"role": "user", "content": ' + inner + "}]}", "utf-8")
    return path


def _one_error_line(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("depth", [100_000, 950])
def test_deeply_nested_json_is_one_error_line_in_every_file_loader(
    tmp_path: Path, depth: int
) -> None:
    deep = str(_deep(tmp_path, depth))
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "x", "relevant": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    for args in (
        ["replay", deep],
        ["replay", deep, "--json"],
        ["diff", deep, deep],
        ["diff", deep, deep, "--json"],
        ["plan", deep],
        ["search", "read a file", "--catalog", deep],
        ["eval-retrieval", "--catalog", str(DEMO), "--queries", str(queries)],
    ):
        line = _one_error_line(args)
        assert "nested too deeply" in line or "not a" in line, (args, line)


def test_deeply_nested_json_names_the_file(tmp_path: Path) -> None:
    deep = _deep(tmp_path, 100_000)
    assert _one_error_line(["replay", str(deep)]) == (
        f"error: {deep}: the JSON is nested too deeply to read"
    )
    assert _one_error_line(["diff", str(deep), str(deep)]) == (
        f"error: {deep}: the JSON is nested too deeply to read"
    )


def test_an_unreadable_query_file_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    line = _one_error_line(["eval-retrieval", "--catalog", str(DEMO), "--queries", str(missing)])
    assert line.startswith(f"error: cannot read the query file {str(missing)!r}")
