"""tool_search (exact / fuzzy / miss / arguments) and defer_execute through the gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextchef import (
    ContextChef,
    DeferredConfig,
    Denied,
    ToolCall,
    load_catalog,
    load_demo_catalog,
)
from contextchef.deferred._meta import MAX_FALLBACK_NAMES
from contextchef.search._index import ToolIndex


@pytest.fixture(scope="module")
def github(catalogs_dir: Path) -> ContextChef:
    chef = ContextChef(default_defer=True)
    chef.register_catalog(load_catalog(catalogs_dir / "github.json"))
    chef.register_catalog(load_catalog(catalogs_dir / "mcp-filesystem.json"))
    return chef


def search(chef: ContextChef, **args: Any) -> tuple[str, bool, tuple[str, ...]]:
    done = chef.execute(ToolCall(id="s", name="tool_search", arguments=json.dumps(args)))
    return done.result.content, done.result.is_error, done.loaded


def demo(**kw: Any) -> ContextChef:
    chef = ContextChef(default_defer=True, **kw)
    chef.register_catalog(load_demo_catalog())
    return chef


def test_exact_lookup_returns_parameters(github: ContextChef) -> None:
    text, err, loaded = search(github, tool_names=["github__create_issue"])
    assert not err
    assert loaded == ("github__create_issue",)
    assert text.startswith("github__create_issue  [server: github]")
    assert "owner (string, required)" in text
    assert "repo (string, required)" in text
    assert "defer_execute" in text


def test_exact_lookup_accepts_the_tools_own_name_when_unique(github: ContextChef) -> None:
    _, err, loaded = search(github, tool_names=["create_issue"])
    assert not err and loaded == ("github__create_issue",)


def test_exact_miss_falls_back_to_fuzzy(github: ContextChef) -> None:
    text, err, loaded = search(github, tool_names=["open_new_issue"])
    assert not err
    assert "No tool is named exactly 'open_new_issue'" in text
    assert "github__create_issue" in loaded


def test_exact_miss_with_a_typo_finds_the_near_name_first(github: ContextChef) -> None:
    _, err, loaded = search(github, tool_names=["github__create_isue"])
    assert not err and loaded[0] == "github__create_issue"


def test_fuzzy_search_ranks_the_right_tool_first(github: ContextChef) -> None:
    _, _, loaded = search(github, queries=["list pull requests of a repository"])
    assert loaded[0] == "github__list_pull_requests"
    _, _, loaded = search(github, queries=["read a text file from disk"])
    assert loaded[0] == "filesystem__read_text_file"


def test_default_count_and_cap(github: ContextChef) -> None:
    config = DeferredConfig()
    _, _, loaded = search(github, queries=["issue"])
    assert len(loaded) == config.default_results
    _, _, loaded = search(github, queries=["issue"], limit=100)
    assert len(loaded) == config.max_results
    # the cap binds fuzzy search only: an exact lookup returns every name asked for
    names = [
        f"github__{n}"
        for n in (
            "get_me",
            "create_issue",
            "list_issues",
            "get_commit",
            "list_branches",
            "list_tags",
            "get_tag",
            "fork_repository",
            "create_branch",
            "list_commits",
            "search_code",
            "search_users",
        )
    ]
    _, _, loaded = search(github, tool_names=names)
    assert loaded == tuple(names)


def test_no_hit_is_a_sentence_not_an_empty_result(github: ContextChef) -> None:
    text, err, loaded = search(github, queries=["zzqx quux"])
    assert not err and loaded == ()
    assert text.startswith("No tool matched 'zzqx quux'.")
    assert "other keywords" in text


@pytest.mark.parametrize(
    "args",
    [{}, {"tool_names": ["a"], "queries": ["b"]}, {"tool_names": []}, {"queries": 3}],
)
def test_exactly_one_of_tool_names_and_queries(github: ContextChef, args: dict[str, Any]) -> None:
    text, err, _ = search(github, **args)
    assert err
    assert "exactly one of 'tool_names'" in text or "Invalid arguments" in text


def test_result_text_respects_the_character_cap(catalogs_dir: Path) -> None:
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(result_chars=1500))
    chef.register_catalog(load_catalog(catalogs_dir / "github.json"))
    text, _, loaded = search(chef, queries=["pull request"], limit=10)
    assert 1 <= len(loaded) < 10
    assert "Other matches (parameters not shown):" in text
    full_part = text.split("Other matches")[0]
    assert len(full_part) <= 1500


def test_overflow_tiers_full_then_brief_then_names(github: ContextChef) -> None:
    config = DeferredConfig()
    text, _, loaded = search(github, queries=["issue"], limit=2)
    assert len(loaded) == 2
    tail = text.split("Other matches (parameters not shown):\n")[1].split("\n\n")[0]
    lines = tail.splitlines()
    listed, closing = lines[:-1], lines[-1]
    assert len(listed) == config.overflow_results
    brief = [ln for ln in listed if ": " in ln]
    bare = [ln for ln in listed if ": " not in ln]
    assert len(brief) == config.brief_results
    assert listed == brief + bare  # descriptions first, then names only
    assert closing.startswith('To load their full schemas, call tool_search({"tool_names": [')
    assert not set(loaded) & {ln[2:].split(":")[0] for ln in listed}


def test_defer_execute_valid_call_is_checked_under_the_real_name(github: ContextChef) -> None:
    call = ToolCall(
        id="e1",
        name="defer_execute",
        arguments=json.dumps({"tool_name": "github__get_me", "params": {}}),
    )
    check = github.check_tool_call(call)
    assert check.decision == "allowed"
    assert check.tool.name == "get_me" and check.tool.server == "github"
    assert check.via == "defer_execute"


def test_defer_execute_invalid_params_return_the_expected_schema(github: ContextChef) -> None:
    call = ToolCall(
        id="e2",
        name="defer_execute",
        arguments=json.dumps({"tool_name": "github__create_issue", "params": {"owner": 1}}),
    )
    check = github.check_tool_call(call)
    assert isinstance(check, Denied) and check.code == "invalid_arguments"
    assert "owner: 1 is not of type 'string' (rule: type)" in check.reason
    assert "(root): 'repo' is a required property (rule: required)" in check.reason
    assert "Expected input schema:" in check.reason


def test_defer_execute_unknown_target(github: ContextChef) -> None:
    call = ToolCall(id="e3", name="defer_execute", arguments='{"tool_name": "nope", "params": {}}')
    check = github.check_tool_call(call)
    assert isinstance(check, Denied) and check.code == "unknown_tool"
    assert "tool_search" in check.reason


def test_calling_a_deferred_tool_directly_says_how_to_reach_it(catalogs_dir: Path) -> None:
    chef = ContextChef(default_defer=True)  # its own: the shared one may have loaded it
    chef.register_catalog(load_catalog(catalogs_dir / "github.json"))
    direct = ToolCall(id="d", name="github__get_me", arguments="{}")
    check = chef.check_tool_call(direct)
    assert isinstance(check, Denied) and check.code == "not_loaded"
    assert 'tool_search({"tool_names": ["github__get_me"]})' in check.reason
    search(chef, tool_names=["github__get_me"])
    check = chef.check_tool_call(direct)
    assert isinstance(check, Denied) and check.code == "not_loaded"
    assert "loaded already: call it with defer_execute" in check.reason


def test_loaded_tools_are_recorded(catalogs_dir: Path) -> None:
    chef = ContextChef(default_defer=True)
    chef.register_catalog(load_catalog(catalogs_dir / "mcp-memory.json"))
    assert chef.loaded_tools == ()
    search(chef, tool_names=["memory__read_graph"])
    assert chef.loaded_tools == ("memory__read_graph",)


def test_directory_budget_drops_whole_groups_and_says_so(catalog_paths: list[Path]) -> None:
    chef = ContextChef(default_defer=True, deferred=DeferredConfig(directory_chars=3000))
    for p in catalog_paths:
        chef.register_catalog(load_catalog(p, server=p.stem))
    directory = chef.view.directory
    last = directory.splitlines()[-2]
    assert last.startswith("[") and "more server(s)" in last and "tool_search" in last
    listed = [ln.strip() for ln in directory.splitlines() if ln.startswith("  ")]
    # every group is either whole or absent
    for server in {t.server for t in chef.tools}:
        names = {chef.view.wire_names[t.key] for t in chef.tools if t.server == server}
        assert names <= set(listed) or not (names & set(listed))
    assert sum(len(x) + 1 for x in directory.splitlines()) < 3000 + 400


def test_server_header_is_truncated_with_an_ellipsis() -> None:
    chef = ContextChef(default_defer=True)
    chef.register_tools(
        [{"name": "t", "description": "x"}], server="s", server_description="word " * 50
    )
    header = next(ln for ln in chef.view.directory.splitlines() if ln.startswith("s: "))
    assert header.endswith("…") and len(header) == len("s: ") + DeferredConfig().header_chars


def test_extended_index_scores_like_a_rebuilt_one(catalogs_dir: Path) -> None:
    from contextchef import Tool
    from contextchef.search._index import ToolIndex

    cat = load_catalog(catalogs_dir / "github.json")
    entries = [(t, t.name) for t in cat.tools]
    new = Tool(
        name="summarize_release_notes",
        description="Summarize the release notes of a GitHub release into bullet points.",
    )
    rebuilt = ToolIndex([*entries, (new, new.name)])
    extended = ToolIndex(entries).extended([(new, new.name)])
    top = extended.search(["summarize release notes"], limit=1)
    assert [h.wire_name for h in top] == ["summarize_release_notes"]
    for query in ("summarize release notes", "release"):
        a = rebuilt.search([query], limit=10)
        b = extended.search([query], limit=10)
        score_a = next(h.score for h in a if h.wire_name == new.name)
        score_b = next(h.score for h in b if h.wire_name == new.name)
        assert score_b == pytest.approx(score_a, rel=0.05)  # same formula, stats of N vs N+1
    assert "summarize_release_notes" in extended and len(extended) == len(entries) + 1


@pytest.mark.parametrize(
    "args",
    [
        {"queries": ["x"], "limit": 0},
        {"queries": ["x"], "limit": "3"},
        {"queries": ["x"], "limit": True},
        {"queries": "issue"},
        {"queries": [None]},
        {"queries": [""]},
        {"tool_names": [1]},
    ],
)
def test_tool_search_arguments_follow_its_schema(args: dict[str, Any]) -> None:
    text, err, _ = search(demo(), **args)
    key = "limit" if "limit" in args else "tool_names" if "tool_names" in args else "queries"
    assert err and text.startswith(f"Invalid tool_search arguments: {key}")
    assert "takes exactly one of 'tool_names'" in text


def test_a_limit_written_as_a_float_counts_as_an_integer() -> None:
    """JSON Schema counts 2.0 as an integer; the search gets 2, not a crash."""
    text, err, _ = search(demo(), queries=["issue"], limit=2.0)
    assert not err and text


def test_tool_search_text_never_exceeds_the_cap() -> None:
    chef = demo()
    cap = DeferredConfig().result_chars
    text, _, _ = search(chef, queries=["x" * 50_000])
    assert len(text) <= cap
    names = [chef.view.wire_names[t.key] for t in chef.tools] * 3
    text, _, loaded = search(chef, tool_names=names)
    assert len(text) <= cap and loaded
    assert all(name in text for name in loaded)


def test_many_unknown_names_stay_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    # it once took 20 s: every unknown name got a near-spelling search; the work is now
    # bounded by MAX_FALLBACK_NAMES whatever the input (counted, not timed)
    chef = demo()
    lookups: list[str] = []
    near_names = ToolIndex.near_names

    def counted(self: ToolIndex, name: str, **kwargs: Any) -> Any:
        lookups.append(name)
        return near_names(self, name, **kwargs)

    monkeypatch.setattr(ToolIndex, "near_names", counted)
    text, err, _ = search(chef, tool_names=[f"no_such_tool_{i}" for i in range(1000)])
    assert 1 <= len(lookups) <= MAX_FALLBACK_NAMES
    assert not err and "and 995 more" in text


def test_read_only_mode_says_why_a_tool_is_missing() -> None:
    chef = demo()
    chef.set_mode("read_only")
    wire = chef.wire_name("create_issue", server="issue-tracker")
    text, _, _ = search(chef, tool_names=[wire])
    assert f'Tool "{wire}" is not available in mode "read_only".' in text


def test_defer_execute_of_a_meta_tool_is_explained() -> None:
    check = demo().check_tool_call(
        ToolCall(
            id="1", name="defer_execute", arguments='{"tool_name": "tool_search", "params": {}}'
        )
    )
    assert isinstance(check, Denied) and "call tool_search directly" in check.reason


def test_deferred_templated_tools_are_searched_and_shown_rendered() -> None:
    chef = ContextChef(default_defer=True, template_vars={"project": "acme"})
    chef.register_tools(
        [{"name": "deploy", "description": "Deploys {{ project }} services.", "template": True}]
    )
    text, _, loaded = search(chef, queries=["acme"])
    assert loaded == ("deploy",)
    assert "Deploys acme services." in text and "{{" not in text
