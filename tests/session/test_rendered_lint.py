"""Break-it round 20: what templates render and server descriptions say is linted and kept.

lint5/lint6: a templated description rendered a ``template_vars`` timestamp and UUID into
every payload's tools while ``volatile_values`` stayed ``()`` and ``"raise"`` raised
nothing. lint3: ``server_description`` without ``server=`` was dropped without a word.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from test_ingest import send

from contextchef import ContextChef, Tool, UsageError, VolatileValueError, user
from contextchef.stores import SessionSync, SQLiteSessionStore
from contextchef.testing import fake_for, text
from contextchef.tools._lint import find_volatile

NOW = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
RID = "7e07485f-12f9-416b-8b14-26260799b51f"
SCHEMA: dict[str, Any] = {"type": "object"}


def _deploy(description: str = "Deploy. Build {{ build }} request {{ rid }}.") -> Tool:
    return Tool(name="deploy", description=description, input_schema=SCHEMA, template=True)


@pytest.mark.parametrize("target", ["openai", "anthropic", "responses"])
def test_a_rendered_description_is_linted_naming_the_variable(target: str) -> None:
    chef = ContextChef(template_vars={"build": NOW, "rid": RID, "team": "ops"})
    chef.register_tools([_deploy()])
    found = {(v.location, v.kind, v.text) for v in chef.volatile_values}
    where = "tool 'deploy' description (rendered from template_vars"
    assert found == {(f"{where}['build'])", "datetime", NOW), (f"{where}['rid'])", "uuid", RID)}
    fake = fake_for(target).script(text("a"), text("b"))
    for question in ("q1", "q2"):  # every value the payload's tools carry is one it named
        chef.append(user(question))
        payload = chef.compile(target).payload
        in_tools = {v for _, _, v in find_volatile(json.dumps(payload["tools"]))}
        assert in_tools == {NOW, RID}
        chef.ingest(send(target, fake, payload))


def test_raise_refuses_the_rendered_value_before_registering() -> None:
    chef = ContextChef(template_vars={"build": NOW}, volatile_lint="raise")
    with pytest.raises(VolatileValueError, match=r"template_vars\['build'\]") as info:
        chef.register_tools([_deploy("Build {{ build }}.")])
    assert [v.text for v in info.value.values] == [NOW]
    assert chef.tools == ()


def test_a_fragment_is_named_and_a_stable_variable_is_not_flagged() -> None:
    chef = ContextChef(
        template_vars={"team": "ops", "release": "2019-03-01"},
        template_fragments={"stamp": f"Session {RID}."},
    )
    chef.register_tools([_deploy("Deploy for {{ team }} ({{ release }}). {{ fragment('stamp') }}")])
    assert [(v.location, v.text) for v in chef.volatile_values] == [
        ("tool 'deploy' description (rendered from template_fragments['stamp'])", RID)
    ]


def test_session_sync_workers_each_lint_their_own_rendering(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """lint6: a worker's ``make_chef`` stamps its start time; each turn's chef says so."""
    stamps = [f"{NOW[:-6]}.00000{i}+00:00" for i in range(1, 4)]

    def make_chef() -> ContextChef:
        chef = ContextChef(template_vars={"started": stamps[len(seen)]})
        chef.register_tools([_deploy("Deploy. Worker started {{ started }}.")])
        return chef

    seen: list[tuple[str, ...]] = []
    fake = fake_for("openai").script(*[text(f"a{i}") for i in range(3)])
    sync = SessionSync(SQLiteSessionStore(str(tmp_path / "s.db")), "c")
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        for i in range(3):

            def turn(chef: ContextChef, i: int = i) -> None:
                chef.append(user(f"q{i}"))
                chef.ingest(send("openai", fake, chef.compile("openai").payload))
                seen.append(tuple(v.text for v in chef.volatile_values))

            sync.run_turn(make_chef, turn)
    assert seen == [(s,) for s in stamps]
    assert sum("template_vars['started']" in r.getMessage() for r in caplog.records) == 3


def test_server_description_goes_to_the_tools_one_server() -> None:
    """lint3: no ``server=``, every tool of server ``s9``: the description is s9's."""
    chef = ContextChef(default_defer=True)
    tool = Tool(name="a", description="x", input_schema=SCHEMA, server="s9")
    chef.register_tools([tool], server_description=f"Started {NOW}")
    assert [(v.location, v.text) for v in chef.volatile_values] == [
        ("server 's9' description", NOW)
    ]
    chef.set_history([user("hi")])
    assert f"Started {NOW}" in json.dumps(chef.compile("anthropic").payload)


@pytest.mark.parametrize(
    ("servers", "named"), [((None,), "no server"), (("s1", "s2"), "servers ['s1', 's2']")]
)
def test_server_description_with_no_one_server_is_refused(
    servers: tuple[str | None, ...], named: str
) -> None:
    chef = ContextChef()
    tools = [
        Tool(name=f"t{i}", description="x", input_schema=SCHEMA, server=s)
        for i, s in enumerate(servers)
    ]
    with pytest.raises(UsageError, match=f"server_description needs .*of {re.escape(named)}"):
        chef.register_tools(tools, server_description="Ops.")
    assert chef.tools == ()
