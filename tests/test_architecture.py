"""One public surface; imports flow down the layer table of DESIGN.md; no import circles."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import contextchef
from contextchef import _errors
from contextchef.providers import TARGETS, WIRES, Profile, adapters, wire_reader

PKG = Path(contextchef.__file__).parent

# Top-level package or module -> layer rank. A module may import only from layers of rank
# <= its own (or from its own package). See docs/ARCHITECTURE.md.
LAYERS = {
    "_cache": 0,
    "_echo": 0,  # model-written text quoted in a message, capped
    "_errors": 0,
    "_json": 0,
    "_json_read": 0,  # stored JSON read back: msgspec (the fastjson extra) where it agrees
    "_lazy": 0,  # a package's names imported on first use (PEP 562)
    "_locking": 0,
    "_overlay": 0,
    "_records": 0,
    "_sdk": 0,  # SDK objects as JSON dicts, past pydantic's depth limit
    "_signing": 0,  # signed snapshots: HMAC over the canonical JSON form
    "_tokens": 0,
    "_cli_io": 9,  # what the CLI writes: a reader that closes the pipe early
    "history": 1,  # the message IR and history invariants: foundation only
    "tools": 1,
    "exposure": 2,
    "search": 3,
    "deferred": 4,
    "dispatch": 5,
    "providers": 6,  # wire formats: IR + compiled tools -> payload, history -> IR
    "session": 8,
    "stores": 9,  # session stores: snapshots outside the process (above the session)
    "analysis": 9,  # replay, plan, diagnose: offline figures over sessions
    "testing": 9,
    "cli": 9,
    "mcp": 9,  # live MCP servers (the `mcp` extra): a session plus the SDK
    "__init__": 9,
}


def layer_of(path: Path) -> str:
    return path.relative_to(PKG).parts[0].removesuffix(".py")


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["contextchef", *parts])


def imports(path: Path) -> Iterator[str]:
    """Every ``contextchef`` module `path` imports (TYPE_CHECKING imports included)."""
    tree = ast.parse(path.read_text("utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "contextchef" or node.module.startswith("contextchef."):
                yield node.module
                for alias in node.names:  # `from contextchef.x import _y` imports a module
                    candidate = f"{node.module}.{alias.name}"
                    if candidate in MODULES:
                        yield candidate
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("contextchef."))


MODULES = {module_name(p): p for p in PKG.rglob("*.py")}


def test_every_package_has_a_layer() -> None:
    assert {layer_of(p) for p in PKG.rglob("*.py")} <= set(LAYERS)


def test_imports_flow_down_the_layers() -> None:
    for path in PKG.rglob("*.py"):
        name = layer_of(path)
        for module in imports(path):
            if module == "contextchef":
                assert name in ("cli", "testing", "__init__"), f"{path} imports contextchef"
                continue
            target = module.split(".")[1]
            assert LAYERS[target] <= LAYERS[name] or target == name, (
                f"{path.relative_to(PKG)} imports {module} (layer {target}={LAYERS[target]} "
                f"> {name}={LAYERS[name]})"
            )


def test_the_session_never_imports_stores_or_analysis() -> None:
    # stores and analysis sit above the session: they build and restore sessions, the
    # session runtime never reaches them (not even lazily, inside a function)
    for path in (PKG / "session").rglob("*.py"):
        for module in imports(path):
            assert module.split(".")[1:2] not in (["stores"], ["analysis"]), (
                f"{path.relative_to(PKG)} imports {module}"
            )


def test_session_stays_within_its_line_budget() -> None:
    # the runtime only: stores and offline analysis (replay, plans, cost accounting) live in
    # their own packages above it. Issue 22's limit.
    lines = sum(len(p.read_text("utf-8").splitlines()) for p in (PKG / "session").glob("*.py"))
    assert lines <= 8000, f"session/ has {lines} lines"


def test_no_import_circle() -> None:
    graph = {
        name: {m for m in imports(path) if m in MODULES and m != name}
        for name, path in MODULES.items()
    }
    # a package's __init__ importing its own modules is not a circle through them
    done: set[str] = set()

    def visit(node: str, stack: list[str]) -> None:
        if node in stack:
            cycle = [*stack[stack.index(node) :], node]
            raise AssertionError("import circle: " + " -> ".join(cycle))
        if node in done:
            return
        for nxt in sorted(graph[node]):
            if nxt != "contextchef" and not node.startswith(nxt + "."):
                visit(nxt, [*stack, node])
        done.add(node)

    for name in sorted(graph):
        visit(name, [])


def test_messages_and_providers_do_not_touch_the_registry() -> None:
    for path in [*(PKG / "history").rglob("*.py"), *(PKG / "providers").rglob("*.py")]:
        text = path.read_text("utf-8")
        assert "_registry" not in text and "exposure" not in text, path


def test_all_is_exactly_what_is_importable() -> None:
    public = {n for n in dir(contextchef) if not n.startswith("_")}
    # layer packages: importable on their own, not part of the flat surface
    public -= {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()} | {"cli"}
    assert set(contextchef.__all__) == public
    for name in contextchef.__all__:
        assert getattr(contextchef, name) is not None


def test_every_public_exception_is_exported() -> None:
    for name, obj in inspect.getmembers(_errors, inspect.isclass):
        if issubclass(obj, Exception) and obj.__module__ == _errors.__name__:
            assert name in contextchef.__all__, name


def test_the_exception_tree_in_the_docstring_is_the_class_tree() -> None:
    """`_errors`' drawing names every exception class once, under its own parent."""
    drawn: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in (_errors.__doc__ or "").splitlines():
        found = re.match(r"^(\s*(?:[│ ]   )*)(?:[├└]── )?([A-Z]\w*(?:Error|TooLarge))\b", line)
        if found is None:
            continue
        depth = found.start(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        drawn[found.group(2)] = stack[-1][1] if stack else ""
        stack.append((depth, found.group(2)))
    classes = {
        name: obj
        for name, obj in inspect.getmembers(_errors, inspect.isclass)
        if issubclass(obj, _errors.ContextChefError)
    }
    assert set(drawn) == set(classes)
    for name, parent in drawn.items():
        bases = [b.__name__ for b in classes[name].__bases__ if b.__name__ in classes]
        assert bases == ([parent] if parent else []), (name, parent, bases)


def test_py_typed_marker_ships() -> None:
    assert (PKG / "py.typed").is_file()


TARGET_NAMES = TARGETS
_COMPARISON = re.compile(
    r"""(==|!=|\bin\b)\s*\(?\s*["'](?P<a>\w+)["']|["'](?P<b>\w+)["']\s*(==|!=)"""
)


def test_no_target_name_is_compared_outside_providers() -> None:
    for path in PKG.rglob("*.py"):
        if layer_of(path) == "providers":
            continue
        for lineno, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            for found in _COMPARISON.finditer(line):
                name = found.group("a") or found.group("b")
                assert name not in TARGET_NAMES, f"{path.relative_to(PKG)}:{lineno}: {line}"


def test_every_profile_field_is_read() -> None:
    source = "\n".join(p.read_text("utf-8") for p in PKG.rglob("*.py"))
    for field in dataclasses.fields(Profile):
        assert re.search(rf"profile\.{field.name}\b", source), field.name


def test_module_sizes() -> None:
    # The facade's budget is on ContextChef's public members and the size of each
    # (tests/session/test_chef_surface.py), not on its file: its docstrings are the API's.
    facade = PKG / "session" / "_chef.py"
    for path in PKG.rglob("*.py"):
        lines = len(path.read_text("utf-8").splitlines())
        assert path == facade or lines <= 620, f"{path.relative_to(PKG)} has {lines} lines"


# -- adding a target on an existing wire -----------------------------------------------------

WIRE_PACKAGES = frozenset(
    p.name for p in (PKG / "providers").iterdir() if (p / "__init__.py").is_file()
)
TARGET_FILES = ("providers/_targets.py", "providers/__init__.py")
"""The only files outside ``providers/<wire>/`` a new target on an existing wire touches:
its line in the target table, and its adapter class's export. docs/ARCHITECTURE.md
lists them too."""


def _outside_the_wires() -> Iterator[Path]:
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] == "providers" and rel.parts[1] in WIRE_PACKAGES:
            continue
        if rel.as_posix() not in TARGET_FILES:
            yield path


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    found.add(id(stmt.value))  # module/class/function and attribute docs
    return found


def _names_in_code(tree: ast.AST, word: str) -> Iterator[int]:
    """Lines where `word` appears in code: a string (docstrings aside) or an identifier."""
    pattern = re.compile(rf"(?<![a-z]){re.escape(word)}(?![a-z])", re.IGNORECASE)
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            text = node.name
        elif isinstance(node, ast.alias):
            text = node.asname or node.name
        if text is not None and pattern.search(text):
            yield getattr(node, "lineno", 0)


def test_a_new_target_touches_only_the_target_table_outside_its_wire_package() -> None:
    # A target on an existing wire is its adapter in providers/<wire>/ (its Profile: history
    # rules, default model, API host; its model rules) plus its line in the target table and
    # its export (TARGET_FILES). So: nothing else imports a wire package, and the name of a
    # target that is not its wire's own (deepseek on the Chat wire: the case of every new
    # target on an existing wire) appears, in code, nowhere else. Tables keyed by wire
    # (the fakes, typed formats) do not change when a target joins a wire.
    problems = []
    for path in _outside_the_wires():
        rel = path.relative_to(PKG)
        for module in imports(path):
            parts = module.split(".")
            if parts[1:2] == ["providers"] and len(parts) > 2 and parts[2] in WIRE_PACKAGES:
                problems.append(f"{rel}: imports {module}")
    guests = {t: a for t, a in adapters().items() if a.profile.wire != t}
    assert guests, "expected a target on another target's wire (deepseek)"
    for target, adapter in guests.items():
        home = type(adapter).__module__.split(".")[2]
        for path in sorted(PKG.rglob("*.py")):
            rel = path.relative_to(PKG)
            if rel.parts[:2] == ("providers", home) or rel.as_posix() in TARGET_FILES:
                continue
            tree = ast.parse(path.read_text("utf-8"))
            problems += [f"{rel}:{n}: names {target!r}" for n in _names_in_code(tree, target)]
    assert not problems, "\n".join(problems)


def test_the_target_table_names_each_target_once_and_every_wire_reads() -> None:
    table = adapters()
    assert tuple(sorted(table)) == TARGETS
    assert {a.profile.target for a in table.values()} == set(TARGETS)
    assert all(a.profile.target == name for name, a in table.items())
    assert {r.wire for r in WIRES} == {a.profile.wire for a in table.values()}
    assert all(wire_reader(r.wire) is r for r in WIRES)
    assert len({r.recording for r in WIRES}) == len(WIRES)


def test_bounded_caches_are_the_one_helper() -> None:
    """Every LRU memo is a `contextchef._cache.LruMap` or `lru_cache` (cleared together
    by `clear_caches`): no module keeps its own OrderedDict eviction loop."""
    for path in PKG.rglob("*.py"):
        if path.name == "_cache.py":
            continue
        text = path.read_text(encoding="utf-8")
        for marker in ("move_to_end(", "popitem(last=False)", "functools.lru_cache"):
            assert marker not in text, f"{path.relative_to(PKG)} uses {marker}: use _cache"
