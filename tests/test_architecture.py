"""One public surface, and imports only flow down the layer table of DESIGN.md."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import contextchef
from contextchef import _errors

PKG = Path(contextchef.__file__).parent

# module -> layer rank; a module may import only from modules with rank <= its own
LAYERS = {
    "_errors": 0,
    "_json": 0,
    "_tokens": 0,
    "_schema": 1,
    "_template": 1,
    "_tool": 1,
    "_names": 1,
    "_registry": 1,
    "_catalogs": 1,
    "_exposure": 2,
    "_search": 3,
    "_retrieval": 3,
    "_deferred": 4,
    "_view": 4,
    "_toolgroups": 4,
    "_dispatch": 5,
    "_messages": 0,  # the IR is a leaf: it imports only _errors and _json
    "_normalize": 0,  # the rest of the messages layer: _errors, _json, _messages, _tokens
    "_compaction": 0,
    "_offload": 0,
    "providers": 7,
    "_chef": 8,
    "_pruner": 8,
    "_memory": 8,
    "_accounting": 8,
    "_announce": 8,
    "_snapshot": 8,
    "cli": 9,
    "__init__": 9,
}


def layer_of(path: Path) -> tuple[str, int]:
    rel = path.relative_to(PKG)
    name = rel.parts[0].removesuffix(".py")
    return name, LAYERS[name]


def test_imports_flow_down_the_layers() -> None:
    for path in PKG.rglob("*.py"):
        name, rank = layer_of(path)
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("contextchef.")
            ):
                target = node.module.split(".")[1]
                assert LAYERS[target] <= rank or target == name, (
                    f"{path.relative_to(PKG)} imports {node.module} (layer {LAYERS[target]} "
                    f"> {rank})"
                )


def test_messages_and_providers_do_not_touch_the_registry() -> None:
    for path in [PKG / "_messages.py", *(PKG / "providers").glob("*.py")]:
        text = path.read_text("utf-8")
        assert "_registry" not in text and "_exposure" not in text, path


def test_all_is_exactly_what_is_importable() -> None:
    public = {n for n in dir(contextchef) if not n.startswith("_")}
    public -= {"providers", "cli"}  # subpackages, importable on their own
    assert set(contextchef.__all__) == public
    for name in contextchef.__all__:
        assert getattr(contextchef, name) is not None


def test_every_public_exception_is_exported() -> None:
    for name, obj in inspect.getmembers(_errors, inspect.isclass):
        if issubclass(obj, Exception) and obj.__module__ == _errors.__name__:
            assert name in contextchef.__all__, name


def test_py_typed_marker_ships() -> None:
    assert (PKG / "py.typed").is_file()
