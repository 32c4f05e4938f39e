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
from contextchef.providers import Profile

PKG = Path(contextchef.__file__).parent

# Top-level package or module -> layer rank. A module may import only from layers of rank
# <= its own (or from its own package). See docs/ARCHITECTURE.md.
LAYERS = {
    "_errors": 0,
    "_json": 0,
    "_overlay": 0,
    "_records": 0,
    "_tokens": 0,
    "history": 1,  # the message IR and history invariants: foundation only
    "tools": 1,
    "exposure": 2,
    "search": 3,
    "deferred": 4,
    "dispatch": 5,
    "providers": 6,  # wire formats: IR + compiled tools -> payload, history -> IR
    "session": 8,
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


def test_py_typed_marker_ships() -> None:
    assert (PKG / "py.typed").is_file()


TARGET_NAMES = ("anthropic", "openai", "responses", "gemini", "deepseek")
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
