"""A catalog file loaded again shares everything built for its first load (issue 27, item 3).

A worker that loads its catalog for each conversation gets the tools of the first load
(`load_catalog` keys them by the file's text), so its new sessions adopt the registry
state, view and rendered tools built once per process. Sharing never changes bytes: a
session sends exactly what a session built with every cache empty sends, and another
target, strategy, exposure, system prompt or file content never gets another's rendering.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextchef import CatalogFormatError, ContextChef, Tool, load_catalog, user
from contextchef._cache import clear_caches
from contextchef.tools._catalogs import Catalog

CATALOG = {
    "server": "files",
    "description": "Local files.",
    "tools": [
        {
            "name": "read_file",
            "description": "Read a file.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
        {
            "name": "write_file",
            "description": "Write a file.",
            "inputSchema": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                "required": ["path", "text"],
            },
        },
        {"name": "list_dir", "description": "List a directory.", "inputSchema": {"type": "object"}},
    ],
}

# (target, compile options, session options): each renders another prefix
VARIANTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("anthropic", {"model": "claude-opus-5-5"}, {}),
    ("anthropic", {"model": "claude-opus-5-5", "strategy": "anthropic-native"}, {}),
    ("anthropic", {"model": "claude-opus-5-5"}, {"defer": ["files__write_*"]}),
    ("anthropic", {"model": "claude-opus-5-5"}, {"system": "Other system."}),
    ("openai", {"model": "gpt-5.6"}, {}),
    ("openai", {"model": "gpt-5.6"}, {"defer": ["files__write_*"]}),
    ("responses", {"model": "gpt-5.6"}, {}),
    ("responses", {"model": "gpt-5.6", "strategy": "openai-native"}, {"defer": ["files__*"]}),
    ("gemini", {"model": "gemini-3-pro"}, {}),
]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    out = tmp_path / "files.json"
    out.write_text(json.dumps(CATALOG), "utf-8")
    return out


def _compile(catalog: Catalog, target: str, options: dict[str, Any], made: dict[str, Any]) -> str:
    chef = ContextChef(defer=made.get("defer", ()))
    chef.register_catalog(catalog)
    chef.set_system_prompt(made.get("system", "You are careful."))
    chef.append(user("hi"))
    return chef.compile(target, max_tokens=1024, **options).to_json()


def test_a_file_loaded_again_gives_the_same_tools_in_a_new_catalog(path: Path) -> None:
    first = load_catalog(path)
    first.server_descriptions["files"] = "Edited by the host."  # a caller's own copy
    again = load_catalog(path)
    assert again is not first and again.tools is first.tools
    assert again.server_descriptions == {"files": "Local files."}
    assert again.source == str(path)
    renamed = load_catalog(path, server="disk")  # another server name: other tools
    assert renamed.tools is not first.tools
    assert {t.server for t in renamed.tools} == {"disk"}
    assert load_catalog(path, server="disk").tools is renamed.tools


def test_a_changed_file_is_loaded_and_checked_anew(path: Path) -> None:
    first = load_catalog(path)
    changed = json.loads(json.dumps(CATALOG))
    changed["tools"][0]["description"] = "Read a file, as text."
    path.write_text(json.dumps(changed), "utf-8")
    again = load_catalog(path)
    assert again.tools is not first.tools
    assert again.tools[0].description == "Read a file, as text."
    changed["tools"][0]["inputSchema"] = {"type": "nope"}
    path.write_text(json.dumps(changed), "utf-8")
    with pytest.raises(CatalogFormatError, match="read_file"):
        load_catalog(path)


@pytest.mark.parametrize(("target", "options", "made"), VARIANTS)
def test_sessions_over_reloaded_files_send_the_bytes_of_a_session_built_alone(
    path: Path, target: str, options: dict[str, Any], made: dict[str, Any]
) -> None:
    clear_caches()
    alone = _compile(load_catalog(path), target, options, made)
    shared = [_compile(load_catalog(path), target, options, made) for _ in range(3)]
    assert shared == [alone] * 3
    a, b = ContextChef(), ContextChef()
    a.register_catalog(load_catalog(path))
    b.register_catalog(load_catalog(path))
    assert a.registry.shared_state is not None
    assert a.registry.shared_state is b.registry.shared_state and a.view is b.view


def test_each_target_option_and_exposure_gets_its_own_rendering(path: Path) -> None:
    """Every variant differs from every other, and each is the same again when shared."""
    clear_caches()
    cold = [_compile(load_catalog(path), t, o, m) for t, o, m in VARIANTS]
    assert len(set(cold)) == len(cold)
    warm = [_compile(load_catalog(path), t, o, m) for t, o, m in reversed(VARIANTS)]
    assert warm[::-1] == cold


def test_a_list_the_caller_changes_is_never_given_a_stale_rendering(path: Path) -> None:
    tools = list(load_catalog(path).tools)

    def session() -> str:
        chef = ContextChef()
        chef.register_tools(tools)
        chef.append(user("hi"))
        return chef.compile("openai", model="gpt-5.6").to_json()

    before = session()
    assert session() == before
    tools[1] = tools[1].replace(description="Write a file, replacing it.")
    tools.append(Tool(name="stat", description="Stat a path.", server="files", source="mcp"))
    after = session()
    assert "Write a file, replacing it." in after and "files__stat" in after
    assert 'Write a file."' not in after
    clear_caches()
    assert session() == after
