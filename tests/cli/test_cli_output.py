"""What the CLI writes: help texts shown as written, and a reader that closes the pipe.

Regressions (breakit22): ``contextchef search --help`` printed ``pip install
"contextchef"`` (rich read ``[semantic]`` as markup); ``contextchef plan | head -1`` and
``replay ... | head -1`` exited 1 with no message (rich's broken-pipe handler), while the
``--json`` forms exited 0. The rule (docs/guides/cli.md, "Exit codes"): a closed standard
output discards the rest of the output and the command exits with its own code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from rich.text import Text
from typer.testing import CliRunner

from contextchef.cli import app

runner = CliRunner()
DEMO = Path(__file__).parents[2] / "src" / "contextchef" / "data" / "demo_catalog.json"
_BRACKETED = re.compile(r"\S*\[[^\]\s]*\]\S*")


def _commands() -> dict[str, Any]:
    """The subcommands, as click (or typer's copy of it) holds them."""
    commands: dict[str, Any] = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    return dict(commands)


def _help_texts(command: Any) -> list[str]:
    texts = [command.help or ""]
    texts += [getattr(p, "help", None) or "" for p in command.params]
    return [t for t in texts if "[" in t]


def test_the_help_of_every_subcommand_shows_its_brackets() -> None:
    commands = _commands()
    assert {"plan", "search", "eval-retrieval", "diff", "replay"} <= set(commands)
    seen = 0
    for name, command in commands.items():
        result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        shown = " ".join(result.output.replace("│", " ").split())
        for text in _help_texts(command):
            plain = Text.from_markup(text).plain
            # nothing in brackets is taken for markup and dropped
            assert plain.count("[") == text.count("["), (name, text)
            for token in _BRACKETED.findall(plain):
                seen += 1
                assert token in shown, (name, token)
    assert seen >= 2  # search's and eval-retrieval's 'pip install "contextchef[semantic]"'
    search = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "300"})
    assert 'pip install "contextchef[semantic]")' in search.output


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    turns = [
        [{"role": "user", "content": "Define cache."}],
        [
            {"role": "user", "content": "Define cache."},
            {"role": "assistant", "content": "A store."},
            {"role": "user", "content": "Thanks."},
        ],
    ]
    data = {
        "format": "anthropic",
        "turns_kind": "per_request",
        "system": "Be brief.",
        "request_params": [{"model": "claude-sonnet-4-6"}] * 2,
        "turns": turns,
    }
    path.write_text(json.dumps(data), "utf-8")
    return path


def _payloads(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A request, one that extends it, one that changes its system prompt."""
    first = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Define cache."}],
    }
    later = [*first["messages"], {"role": "assistant", "content": "A store."}]  # type: ignore[list-item]
    later.append({"role": "user", "content": "Thanks."})
    extended = {**first, "messages": later}
    broken = {**extended, "system": "Be long."}
    paths = []
    for name, data in (("a", first), ("b", extended), ("c", broken)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data), "utf-8")
        paths.append(path)
    return paths[0], paths[1], paths[2]


def _closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the ``contextchef`` script's entry point with a standard output nobody reads.

    The pipe's read end is closed before the process starts: its first write fails.
    """
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-c", "from contextchef.cli import main; main()", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=300,
        )
    finally:
        os.close(write)


def _cases(tmp_path: Path) -> list[tuple[list[str], int]]:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "read a file", "relevant": ["read_file"]}\n', "utf-8")
    first, extended, broken = _payloads(tmp_path)
    transcript = str(_transcript(tmp_path))
    retrieval = ["eval-retrieval", "--catalog", str(DEMO), "--queries", str(queries)]
    return [
        (["plan"], 0),
        (["plan", "--json"], 0),
        (["plan", "--help"], 0),
        (["--help"], 0),
        (["search", "read a file"], 0),
        (["search", "read a file", "--json"], 0),
        (retrieval, 0),
        ([*retrieval, "--json"], 0),
        (["diff", str(first), str(extended)], 0),
        (["diff", str(extended), str(broken)], 1),  # the prefix broke: still 1
        (["diff", str(extended), str(broken), "--json"], 1),
        (["replay", transcript], 0),
        (["replay", transcript, "--json"], 0),
        (["replay", str(tmp_path / "missing.json")], 2),  # bad input: still 2, on stderr
    ]


def test_a_closed_pipe_ends_the_output_and_keeps_each_commands_exit_code(
    tmp_path: Path,
) -> None:
    for args, code in _cases(tmp_path):
        done = _closed_pipe(args)
        assert done.returncode == code, (args, done.stderr)
        if code == 2:
            assert done.stderr.startswith("error: "), (args, done.stderr)
        else:
            assert done.stderr == "", (args, done.stderr)  # no traceback, no "Exception ignored"


@pytest.mark.parametrize("args", [["plan"], ["replay", "T"]])
def test_the_same_commands_with_a_reader_print_everything(tmp_path: Path, args: list[str]) -> None:
    args = [str(_transcript(tmp_path)) if a == "T" else a for a in args]
    done = subprocess.run(
        [sys.executable, "-c", "from contextchef.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) > 10
