"""Fast start: heavy dependencies are imported by the feature that needs them, not before.

Each check runs in a fresh interpreter and reads ``sys.modules`` (no timing here; the
import-time figures are in benchmarks/import_time.py and benchmarks/RESULTS.md).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import contextchef

HEAVY = ("numpy", "bm25s", "jsonschema", "jsonschema_rs", "jinja2", "pydantic", "referencing")
"""Imported only by search (numpy, bm25s), schema checks and argument validation
(jsonschema, jsonschema_rs, referencing), templates (jinja2) and pydantic-typed input."""


def _loaded_after(code: str) -> set[str]:
    """The HEAVY modules present in ``sys.modules`` after running `code` in a new process."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps(sorted(set(sys.modules) & {set(HEAVY)!r})))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_contextchef_imports_no_heavy_dependency() -> None:
    assert _loaded_after("import contextchef") == set()


def test_star_import_resolves_every_name_still_without_search_or_validation_deps() -> None:
    # every public name can be read; search, validation and templates stay unloaded
    # (the library's own tools are built, and their schemas checked, on first use)
    assert _loaded_after("from contextchef import *") == set()


def test_compiling_without_search_loads_no_search_or_template_dependency() -> None:
    code = (
        "from contextchef import ContextChef, load_demo_catalog, user\n"
        "chef = ContextChef(default_defer=True)\n"
        "chef.register_catalog(load_demo_catalog())\n"
        "chef.set_history([user('hi')])\n"
        "for target in ('anthropic', 'openai', 'responses', 'gemini'):\n"
        "    chef.compile(target)\n"
    )
    # registration checks every schema against its meta-schema (jsonschema-rs only)
    assert _loaded_after(code) == {"jsonschema_rs"}


def test_the_plan_command_loads_no_search_or_template_dependency() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from contextchef.cli import main\n"
        "sys.argv = ['contextchef', 'plan']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
    )
    loaded = _loaded_after(code)
    # plan sends a simulated tool_search call through the gate (argument validation:
    # jsonschema), and typer itself imports pydantic; nothing searches or renders a template
    assert not loaded & {"numpy", "bm25s", "jinja2"}


def test_the_first_search_loads_bm25s_and_gives_the_same_ranking() -> None:
    code = (
        "from contextchef import ContextChef, load_demo_catalog\n"
        "from contextchef.search._index import ToolIndex\n"
        "chef = ContextChef(default_defer=True)\n"
        "chef.register_catalog(load_demo_catalog())\n"
        "chef.compile('anthropic')\n"
        "import sys; assert 'bm25s' not in sys.modules\n"
        "hits = chef.view.index.search(['create an issue'], limit=3)\n"
        "assert hits and hits[0].score > 0, hits\n"
    )
    assert {"numpy", "bm25s"} <= _loaded_after(code)


def test_a_template_loads_jinja2() -> None:
    code = (
        "from contextchef.tools._template import render_template\n"
        "assert render_template('Hi {{ x }}', tool='t', variables={'x': 1}) == 'Hi 1'\n"
    )
    assert "jinja2" in _loaded_after(code)


def test_the_lazy_table_matches_the_typed_imports() -> None:
    """``__init__``'s TYPE_CHECKING imports (for type checkers) equal its lazy table."""
    path = Path(contextchef.__file__)
    tree = ast.parse(path.read_text("utf-8"))
    typed: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module
                typed.setdefault(stmt.module, set()).update(a.name for a in stmt.names)
    lazy = {m: set(names) for m, names in contextchef._LAZY_EXPORTS.items()}
    assert typed == lazy
    eager = {n for n in vars(contextchef) if not n.startswith("_")}
    assert set(contextchef.__all__) == {n for names in lazy.values() for n in names} | (
        eager & set(contextchef.__all__)
    )
