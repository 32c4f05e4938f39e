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
        "from contextchef import ContextChef, load_demo_catalog, user\n"
        "from contextchef.search._index import ToolIndex\n"
        "chef = ContextChef(default_defer=True)\n"
        "chef.register_catalog(load_demo_catalog())\n"
        "chef.set_history([user('hi')])\n"
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


def _ours_after(code: str) -> set[str]:
    """The package's own modules in ``sys.modules`` after running `code` in a new process."""
    probe = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('contextchef'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


WIRE_PACKAGES = ("anthropic", "gemini", "gemini_interactions", "openai_chat", "responses")
NOT_AT_START = (
    *(f"contextchef.providers.{wire}." for wire in WIRE_PACKAGES),  # renderer, parser...
    "contextchef.stores",
    "contextchef.analysis",
    "contextchef.mcp",
    "contextchef.cli",
    "contextchef.testing",
    "contextchef.search._index",
    "contextchef.search._corpus",
    "contextchef.search._model",
    "contextchef.search._vectors",
)
"""Packages and modules `from contextchef import ContextChef` leaves unloaded (issue 27):
each wire loads when its target is first used, the rest when their feature is. (Gemini's
package itself holds the made-up call ids ingest reads: only its modules are listed.)"""


SESSION_PARTS = (
    "contextchef.session._",  # every part but the facade (_chef)
    "contextchef.history.",
    "contextchef.tools.",
    "contextchef.exposure.",
    "contextchef.search.",
    "contextchef.deferred.",
    "contextchef.dispatch.",
    "contextchef.providers.",
)
"""What the first `ContextChef()` loads, not the import: the session's parts and the layers
under them (the facade holds no module-level reference to them)."""


def test_the_session_class_loads_no_wire_store_analysis_mcp_cli_or_model_module() -> None:
    loaded = _ours_after("from contextchef import ContextChef")
    assert "contextchef.session._chef" in loaded
    assert not {m for m in loaded if m.startswith(NOT_AT_START)}


def test_the_session_class_loads_no_session_part_nor_dataclasses_or_inspect() -> None:
    loaded = _ours_after(
        "from contextchef import ContextChef\n"
        "import sys\n"
        "assert not {'dataclasses', 'inspect', 'logging', 'pathlib'} & set(sys.modules)\n"
    )
    parts = {m for m in loaded if m.startswith(SESSION_PARTS) and m != "contextchef.session._chef"}
    assert not parts, parts


def test_the_first_session_loads_its_parts_and_its_async_methods_stay_coroutines() -> None:
    loaded = _ours_after(
        "import inspect\n"
        "from contextchef import ContextChef\n"
        "chef = ContextChef()\n"
        "coroutines = {n for n in dir(chef) if inspect.iscoroutinefunction(getattr(chef, n))}\n"
        "assert coroutines == {'acheck_tool_call', 'aexecute', 'arun_tools'}, coroutines\n"
    )
    assert {"contextchef.session._compiling", "contextchef.session._dispatching"} <= loaded


def test_a_compile_loads_only_its_own_wire() -> None:
    loaded = _ours_after(
        "from contextchef import ContextChef, user\n"
        "chef = ContextChef()\n"
        "chef.set_history([user('hi')])\n"
        "chef.compile('anthropic')\n"
    )
    wires = {m.split(".")[2] for m in loaded if m.count(".") > 2 and ".providers." in m}
    assert wires & set(WIRE_PACKAGES) == {"anthropic"}


def test_an_unknown_target_names_every_target_without_loading_the_wires() -> None:
    loaded = _ours_after(
        "from contextchef import ContextChef, UnknownTargetError, user\n"
        "from contextchef.providers import TARGETS\n"
        "chef = ContextChef()\n"
        "chef.set_history([user('hi')])\n"
        "try:\n"
        "    chef.compile('claude')\n"
        "except UnknownTargetError as exc:\n"
        "    assert str(exc).endswith('valid targets: ' + ', '.join(TARGETS)), exc\n"
        "else:\n"
        "    raise AssertionError('no error')\n"
    )
    assert not {m for m in loaded if m.startswith(NOT_AT_START[: len(WIRE_PACKAGES)])}


def test_an_adapter_reads_responses_before_its_target_was_used() -> None:
    _ours_after(  # its wire's parser (the reader) loads with the first read
        "from contextchef.providers.anthropic._render import AnthropicAdapter\n"
        "turn = AnthropicAdapter().read_response({'type': 'message', 'role': 'assistant',\n"
        "    'content': [{'type': 'text', 'text': 'hi'}], 'stop_reason': 'end_turn'})\n"
        "assert turn.turn.messages, turn\n"
    )


_THREADED_FIRST_READS = """
import threading, contextchef
names = ["SessionStore", "RedisSessionStore", "StoredSession", "SQLiteSessionStore",
         "SessionSync", "CacheCostModel", "PlanReport", "CacheReport", "CacheAuditFinding"]
errors, barrier = [], threading.Barrier(len(names))
def read(name):
    barrier.wait()
    try:
        getattr(contextchef, name)
    except BaseException as exc:
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
threads = [threading.Thread(target=read, args=(n,)) for n in names]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""


def test_first_reads_of_lazy_names_from_many_threads_at_once() -> None:
    """Break-it round 7: nine threads reading lazy names of one fresh process at once got
    ``_DeadlockError`` (the stores package's modules imported in two orders at the same
    time) or a partially initialized module in about half the runs. Each run is a new
    process; eight runs would all pass by luck with odds under 1 in 200."""
    for _ in range(8):
        out = subprocess.run(
            [sys.executable, "-c", _THREADED_FIRST_READS],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        assert out.stdout.strip() == "[]", out.stdout


def test_the_first_session_reads_cjk_without_the_dictionary_route() -> None:
    """The rankers and the pruner load with the first session and read `CJK` from its
    leaf module (`contextchef.search._cjk`), not from the dictionary route's."""
    loaded = _ours_after("from contextchef import ContextChef\nContextChef()\n")
    assert {"contextchef.search._rankers", "contextchef.session._pruner"} <= loaded
    assert "contextchef.search._cjk" in loaded
    assert "contextchef.search._bilingual" not in loaded
