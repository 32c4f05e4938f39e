"""Model-written text in error results is capped, and names resolve as tool_search's do.

Break-it 19: a hallucinated 50,000-character name came back whole in the error result
(stored and re-sent every turn) through a direct call, ``defer_execute`` and a namespace
action; ``execute_sql`` registered on two servers was answered "Unknown tool" without
naming the two real tools; ``load_toolkit`` refused ``radar`` for ``Radar``. Each case
runs as a model's turn through the official SDK clients against the fakes.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_ingest import send  # the SDK clients pointed at a fake

from contextchef import ContextChef, Skill, ToolResult, user
from contextchef._echo import echo
from contextchef.testing import fake_for, text, tool_calls

N = "q" * 50_000
CUT = "… (50,000 chars)"
S = {
    "type": "object",
    "properties": {"sql": {"type": "string"}, "rows": {"type": "integer"}},
    "required": ["sql"],
    "additionalProperties": False,
}
PG, MY = "pg_prod__execute_sql_0c4e458e", "my-sql__execute_sql"


def ran(call: Any, allowed: Any) -> str:
    return f"ran {allowed.wire_name}"


FAKES: dict[int, tuple[ContextChef, Any]] = {}  # the chef is kept: its id is not reused


def turn(chef: ContextChef, target: str, *calls: tuple[str, dict[str, Any]]) -> list[ToolResult]:
    """One model turn making `calls`, answered by the session, then the model's answer.

    Each session talks to one fake per target for its whole conversation (multi-turn).
    """
    held = FAKES.get(id(chef))
    if held is None or held[0] is not chef:
        held = FAKES[id(chef)] = (chef, fake_for(target))
    fake = held[1].script(tool_calls(*calls), text("ok"))
    before = len(fake.requests)
    found = chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
    results = chef.run_tools(found, fallback=ran)
    chef.ingest(send(target, fake, chef.compile(target, model="m").payload))
    assert fake.violations == () and len(fake.requests) == before + 2
    chef.append(user("next"))
    return results


def sql_session(**kwargs: Any) -> ContextChef:
    chef = ContextChef(**kwargs)
    pg = {"name": "execute_sql", "description": "Run SQL on pg", "input_schema": S}
    my = {"name": "execute_sql", "description": "Run SQL on mysql", "input_schema": S}
    chef.register_tools([pg], server="pg.prod")
    chef.register_tools([my], server="my-sql")
    chef.set_history([user("go")])
    return chef


def test_echo_cuts_long_text_and_says_how_long() -> None:
    assert echo("abc") == "abc"
    assert echo(N) == "q" * 120 + CUT
    assert echo("x" * 11, 10) == "x" * 10 + "… (11 chars)"


def grouped_session() -> ContextChef:
    chef = ContextChef(default_defer=True)
    chef.register_tools([{"name": "f", "description": "F.", "input_schema": S}])
    group = {"name": "g", "description": "G.", "parameters": {"a": {"type": "string"}}}
    chef.register_namespaces([{"name": "ns", "description": "Ns.", "tools": [group]}])
    kit = {"name": "k", "description": "K.", "parameters": {"a": {"type": "string"}}}
    chef.register_toolkits([{"name": "Radar", "description": "Radar.", "tools": [kit]}])
    h = {"name": "h", "description": "H.", "parameters": {"a": {"type": "string"}}}
    chef.register_tools([h], server="gh")
    chef.register_skills(
        [Skill(name="triage", description="T.", instructions="L.", tools=("gh__h",))]
    )
    chef.set_history([user("go")])
    return chef


@pytest.mark.parametrize("target", ["anthropic", "openai"])
def test_a_huge_model_written_name_is_echoed_cut_in_every_error(target: str) -> None:
    chef = grouped_session()
    f = chef.wire_name("f")
    results = turn(
        chef,
        target,
        (N, {}),
        ("defer_execute", {"tool_name": N, "params": {}}),
        ("ns", {"action": N, "args": {}}),
        ("load_toolkit", {"toolkit_name": N}),
        ("load_skill", {"name": N}),
        ("tool_search", {"tool_names": [N]}),
        ("defer_execute", {"tool_name": f, "params": {"sql": "s", N: 1}}),
        ("defer_execute", {"tool_name": f, "params": {"sql": "s", "rows": N}}),
    )
    for result in results:
        assert result.is_error or "No tool" in result.content, result.content[:200]
        assert len(result.content) < 1_500, result.content[:300]
        assert "q" * 301 not in result.content  # validation messages: MAX_MESSAGE_CHARS
    # the error results name the cut, so the model knows its text was longer
    assert all("chars)" in r.content for r in results), [r.content[:300] for r in results]
    assert results[0].content.startswith(  # a name no tool can have: `history._call_names`
        f'Unknown tool "{"q" * 120}{CUT}": no tool can have this name'
    )
    assert f'Unknown action "{"q" * 120}{CUT}" for "ns"' in results[2].content
    assert f'Unknown toolkit "{"q" * 120}{CUT}". Available toolkits: Radar.' in results[3].content


@pytest.mark.parametrize("target", ["anthropic", "responses", "gemini"])
def test_a_short_name_several_tools_share_names_them_and_the_next_call_runs(
    target: str,
) -> None:
    chef = sql_session()
    (denied,) = turn(chef, target, ("execute_sql", {"sql": "select 1"}))
    assert denied.is_error
    assert denied.content == (
        f'Unknown tool "execute_sql". The tools with this name are "{MY}", "{PG}"; call one '
        "by its exact name."
    )
    (result,) = turn(chef, target, (PG, {"sql": "select 1"}))  # the model picks one
    assert (result.is_error, result.content) == (False, f"ran {PG}")


def test_only_tools_the_model_may_call_are_named() -> None:
    chef = sql_session(modes={"pg": ["pg_prod__*"]})
    chef.set_blocked_tools([PG])
    (denied,) = turn(chef, "anthropic", ("execute_sql", {"sql": "x"}))
    assert f'The tool with this name is "{MY}"' in denied.content and PG not in denied.content
    chef.set_mode("pg")  # my-sql's is hidden, pg's blocked: neither is named
    (denied,) = turn(chef, "anthropic", ("execute_sql", {"sql": "x"}))
    assert MY not in denied.content and PG not in denied.content
    assert denied.content.startswith('Unknown tool "execute_sql". ')


def test_a_skill_tool_is_named_only_once_its_skill_is_loaded() -> None:
    chef = sql_session()
    chef.register_skills([Skill(name="db", description="D.", instructions="I.", tools=(PG,))])
    (denied,) = turn(chef, "openai", ("execute_sql", {"sql": "x"}))
    assert MY in denied.content and PG not in denied.content
    chef.load_skill("db")
    (denied,) = turn(chef, "openai", ("execute_sql", {"sql": "x"}))
    assert MY in denied.content and PG in denied.content


def test_a_near_spelling_is_suggested() -> None:
    chef = sql_session()
    (denied,) = turn(chef, "anthropic", ("pg_prod__execute_sql", {"sql": "x"}))
    assert f'Did you mean "{PG}"?' in denied.content


@pytest.mark.parametrize("target", ["anthropic", "openai"])
def test_meta_tool_names_match_exactly_then_ignoring_case(target: str) -> None:
    chef = grouped_session()
    loaded, skill, action = turn(
        chef,
        target,
        ("load_toolkit", {"toolkit_name": "radar"}),
        ("load_skill", {"name": "TRIAGE"}),
        ("ns", {"action": "G", "args": {"a": "x"}}),
    )
    assert not loaded.is_error and loaded.content.startswith('Loaded toolkit "Radar"')
    assert chef.loaded_toolkits == ("Radar",)
    assert not skill.is_error and chef.loaded_skills == ("triage",)
    assert (action.is_error, action.content) == (False, "ran g")
    (run,) = turn(chef, target, ("defer_execute", {"tool_name": "K", "params": {"a": "x"}}))
    assert (run.is_error, run.content) == (False, "ran k")


def test_names_equal_ignoring_case_are_named_not_guessed() -> None:
    chef = ContextChef()
    kit = {"name": "k", "description": "K.", "parameters": {}}
    chef.register_toolkits(
        [
            {"name": "Radar", "description": "R.", "tools": [kit]},
            {"name": "RADAR", "description": "R.", "tools": [{**kit, "name": "k2"}]},
        ]
    )
    chef.set_history([user("go")])
    (denied,) = turn(chef, "anthropic", ("load_toolkit", {"toolkit_name": "radar"}))
    assert denied.is_error and chef.loaded_toolkits == ()
    assert denied.content == (
        '"radar" matches several toolkits ignoring case: "RADAR", "Radar". Use one exactly.'
    )
    (loaded,) = turn(chef, "anthropic", ("load_toolkit", {"toolkit_name": "RADAR"}))
    assert not loaded.is_error and chef.loaded_toolkits == ("RADAR",)


IP = {
    "type": "object",
    "properties": {
        "ip": {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
        "since": {"type": "string", "format": "date-time"},
        "page": {"type": "string", "format": "uri"},
        "tag": {"type": "string", "format": "our-own-format"},
    },
    "required": ["ip"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("target", ["anthropic", "openai", "gemini"])
def test_values_outside_their_format_run(target: str) -> None:
    """``format`` is an annotation (break-it 20): the tool's own server judges it."""
    chef = ContextChef()
    chef.register_tools([{"name": "ip_details", "description": "IP.", "input_schema": IP}])
    chef.set_history([user("go")])
    results = turn(
        chef,
        target,
        ("ip_details", {"ip": "999.1.1.1"}),
        ("ip_details", {"ip": "1.1.1.1", "since": "2026-01-01T10:00:00"}),
        ("ip_details", {"ip": "::1", "page": "https://en.wikipedia.org/wiki/Café"}),
        ("ip_details", {"ip": "::1", "page": "https://x.com/a|b", "tag": "anything"}),
    )
    assert [(r.is_error, r.content) for r in results] == [(False, "ran ip_details")] * 4
    (bad,) = turn(chef, target, ("ip_details", {"ip": 7}))
    assert bad.is_error and "- ip: 7 is not of type 'string' (rule: type)" in bad.content


def t(name: str) -> dict[str, Any]:
    return {"name": name, "description": "D.", "parameters": {"x": {"type": "string"}}}


@pytest.mark.parametrize("target", ["anthropic", "openai", "gemini"])
def test_actions_ignoring_case_match_only_what_the_model_may_call(target: str) -> None:
    """Break-it 20: hidden or blocked actions were matched and listed."""
    chef = ContextChef(modes={"m": ["fs", "READ_FILE2", "read_file"]})
    actions = ["read_file", "READ_FILE2", "Read_File2", "Admin_Wipe"]
    chef.register_namespaces(
        [{"name": "fs", "description": "Fs.", "tools": [t(a) for a in actions]}]
    )
    chef.set_history([user("go")])
    chef.set_mode("m")
    ok, wipe = turn(
        chef,
        target,
        ("fs", {"action": "read_file2", "args": {"x": "1"}}),
        ("fs", {"action": "admin_wipe", "args": {"x": "1"}}),
    )
    assert (ok.is_error, ok.content) == (False, "ran READ_FILE2")
    assert wipe.content == (
        'Unknown action "admin_wipe" for "fs". Available actions: READ_FILE2, read_file.'
    )
    chef.set_mode(None)
    chef.set_blocked_tools(["Read_File2", "Admin_Wipe"])
    ok, nope = turn(
        chef,
        target,
        ("fs", {"action": "read_file2", "args": {"x": "1"}}),
        ("fs", {"action": "nope", "args": {"x": "1"}}),
    )
    assert (ok.is_error, ok.content) == (False, "ran READ_FILE2")
    assert nope.content.endswith("Available actions: READ_FILE2, read_file.")


@pytest.mark.parametrize("target", ["anthropic", "openai"])
def test_a_toolkit_the_mode_empties_is_not_listed_or_loaded(target: str) -> None:
    chef = ContextChef(modes={"m": ["*keep*", "load_toolkit"]})
    chef.register_tools([t("keep_a")])
    chef.register_toolkits(
        [
            {"name": "Radar", "description": "Radar kit.", "tools": [t("keep_radar")]},
            {"name": "Secret", "description": "Secret kit.", "tools": [t("sec_tool")]},
        ]
    )
    chef.set_history([user("go")])
    assert "Secret" in chef.pruner.compile().directory_xml
    chef.set_mode("m")
    assert "Secret" not in chef.pruner.compile().directory_xml
    secret, radar = turn(
        chef,
        target,
        ("load_toolkit", {"toolkit_name": "Secret"}),
        ("load_toolkit", {"toolkit_name": "radar"}),
    )
    assert secret.is_error
    assert secret.content == 'Unknown toolkit "Secret". Available toolkits: Radar.'
    assert radar.content.startswith('Loaded toolkit "Radar" (1 tool).')
    assert chef.loaded_toolkits == ("Radar",)


def test_deferred_names_resolve_by_one_rule_and_the_hint_says_defer_execute() -> None:
    """Break-it 20: ``get_issue`` resolved while ``GET_ISSUE`` was refused; an ambiguous
    deferred name said "call one by its exact name", which a direct call then refused."""
    chef = ContextChef(default_defer=True)
    chef.register_tools([t("list_issues"), t("get_issue")], server="legacy")
    chef.register_tools([t("list_issues")], server="gh")
    chef.set_history([user("go")])
    got = [
        turn(chef, "anthropic", ("defer_execute", {"tool_name": n, "params": {"x": "1"}}))[0]
        for n in ("get_issue", "GET_ISSUE", "Legacy__Get_Issue", "list_issues")
    ]
    assert [r.content for r in got[:3]] == ["ran legacy__get_issue"] * 3
    (direct,) = turn(chef, "anthropic", ("LIST_ISSUES", {"x": "1"}))
    for denied in (got[3], direct):
        assert denied.is_error and denied.content.endswith(
            'The tools with this name are "gh__list_issues", "legacy__list_issues"; call one '
            'with defer_execute({"tool_name": "<exact name>", "params": {...}}).'
        )
