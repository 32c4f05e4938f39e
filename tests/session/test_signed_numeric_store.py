"""A signed snapshot kept in a store that holds JSON as a value restores (break-it round 30).

PostgreSQL ``jsonb`` (the docs' example of a store that reorders keys) also keeps numbers
as decimals: a float written with an exponent (``1e+20``: every float from 1e16 on) comes
back as the integer ``100000000000000000000``, and ``-0.0`` as ``0.0``. A model's tool
arguments hold such numbers as JSON values on Anthropic and Gemini, so a signed snapshot
of such a conversation used to fail its signature check after the store, and could never
be resumed. The MAC's canonical form now writes those floats as such a store gives them
back (`contextchef._signing._as_numbers`: ``1e+23`` is ``10**23``, break-it round 31); a
signature made the earlier way still verifies, and any changed value is still refused,
a float made an integer (``5.0`` as ``5``, a JavaScript round trip) included.
The conversation then goes on through the official SDK clients against the
`contextchef.testing` fakes, whose thinking check compares numbers by value (R8), on every
target.
"""

from __future__ import annotations

import json
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from test_ingest import send

from contextchef import (
    TARGETS,
    ContextChef,
    SnapshotKeys,
    SnapshotSignatureError,
    _signing,
    tool_results,
    user,
)
from contextchef.testing import fake_for, text, tool_calls
from contextchef.testing._body import by_value

MODELS = {"anthropic": "claude-opus-5-5"}
KEYS = SnapshotKeys({"k1": b"s" * 32})


def calc(a: float, b: float, c: float) -> str:
    """Add three numbers.

    Args:
        a: First.
        b: Second.
        c: Third.
    """
    return str(a + b + c)


def _session() -> ContextChef:
    chef = ContextChef()
    chef.register_tools([calc])
    chef.set_system_prompt("You add numbers.")
    return chef


def _compile(chef: ContextChef, target: str) -> Any:
    return chef.compile(target, model=MODELS.get(target, "m"), max_tokens=100)


def jsonb(text_: str) -> str:
    """`text_` as PostgreSQL ``jsonb`` gives it back: keys shorter first, numbers as decimals."""

    def number(token: str) -> float | int:
        value = float(token)
        if "e+" in token:  # numeric keeps the decimal written: 1e+23 is 10**23
            return int(Decimal(token))
        return 0.0 if value == 0 else value

    def ordered(value: Any) -> Any:
        if isinstance(value, dict):
            keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
            return {k: ordered(value[k]) for k in keys}
        if isinstance(value, list):
            return [ordered(v) for v in value]
        return value

    return json.dumps(ordered(json.loads(text_, parse_float=number)))


def javascript(text_: str) -> str:
    """`text_` after ``JSON.stringify(JSON.parse(text_))``: whole floats are integers there."""

    def number(token: str) -> float | int:
        value = float(token)
        return int(Decimal(repr(value))) if value.is_integer() else value

    return json.dumps(json.loads(text_, parse_float=number))


ARGS = {"a": 1e20, "b": -0.0, "c": 2.5}


def _conversation(target: str, args: Any = None) -> tuple[ContextChef, Any]:
    fake = fake_for(target).script(
        tool_calls(("calc", args or ARGS), reasoning="add them"),
        text("The sum is 1e20.", reasoning="done"),
        text("Again."),
        text("And again."),
    )
    chef = _session()
    chef.set_history([user("Add 1e20, -0.0 and 2.5.")])
    for _ in range(2):
        calls = chef.ingest(send(target, fake, _compile(chef, target).payload))
        chef.append(tool_results([chef.execute(c).result for c in calls]) if calls else user("ok"))
    return chef, fake


@pytest.mark.parametrize("target", TARGETS)
def test_a_signed_snapshot_restores_after_a_numeric_store(target: str) -> None:
    chef, fake = _conversation(target)
    stored = jsonb(json.dumps(chef.snapshot(keys=KEYS, session_id="s")))
    if target in ("anthropic", "gemini", "gemini-interactions"):  # arguments as JSON values
        assert "100000000000000000000" in stored  # the store wrote the float as a decimal
    worker = _session()
    worker.restore(stored, keys=KEYS, session_id="s")
    for k in range(2):  # the conversation goes on, accepted (thinking bound on opus)
        worker.append(user(f"and now {k}"))
        worker.ingest(send(target, fake, _compile(worker, target).payload))
    assert fake.violations == ()
    again = _session()
    again.restore(
        jsonb(json.dumps(worker.snapshot(keys=KEYS, session_id="s"))), keys=KEYS, session_id="s"
    )


@pytest.mark.parametrize(
    "args",
    [
        {"a": 1e23, "b": 2.0**64, "c": 1.5e300},  # a decimal is not the double's integer
        {"a": 5.0, "b": -0.0, "c": 1e16},
        {"a": 0.1, "b": 1e-7, "c": 123456.789},
    ],
)
@pytest.mark.parametrize("target", ["anthropic", "gemini", "openai"])
def test_floats_restore_after_a_decimal_store(target: str, args: dict[str, float]) -> None:
    chef, fake = _conversation(target, args)
    worker = _session()
    stored = jsonb(json.dumps(chef.snapshot(keys=KEYS, session_id="s")))
    worker.restore(stored, keys=KEYS, session_id="s")
    worker.append(user("and now"))
    worker.ingest(send(target, fake, _compile(worker, target).payload))
    assert fake.violations == ()


def test_a_float_made_an_integer_is_refused() -> None:
    """A JavaScript round trip writes ``5.0`` as ``5``: a float become an integer is a changed
    value here (signing every whole float as an integer would make most snapshots, a
    schema's ``"default": 0.0`` included, unreadable by the release before this one)."""
    chef, _ = _conversation("anthropic", {"a": 5.0, "b": 1.5, "c": 2.5})
    text_ = json.dumps(chef.snapshot(keys=KEYS, session_id="s"))
    _session().restore(text_, keys=KEYS, session_id="s")
    with pytest.raises(SnapshotSignatureError) as caught:
        _session().restore(javascript(text_), keys=KEYS, session_id="s")
    assert caught.value.problem == "mismatch"


@pytest.mark.parametrize("edit", [("1e+20", "2e+20"), ("2.5", "2.25"), ("-0.0", "1.0")])
def test_a_changed_number_is_still_refused(edit: tuple[str, str]) -> None:
    chef, _ = _conversation("anthropic")
    text_ = json.dumps(chef.snapshot(keys=KEYS, session_id="s"))
    assert edit[0] in text_
    with pytest.raises(SnapshotSignatureError) as caught:
        _session().restore(jsonb(text_.replace(edit[0], edit[1])), keys=KEYS, session_id="s")
    assert caught.value.problem == "mismatch"


def test_a_signature_over_the_exact_form_still_verifies() -> None:
    """A release before `_as_numbers` signed the exact canonical form: it still restores."""
    chef, _ = _conversation("anthropic")
    snap = chef.snapshot(keys=KEYS, session_id="s")
    header = {k: v for k, v in snap["signature"].items() if k != "mac"}
    body = {k: v for k, v in snap.items() if k != "signature"}
    exact, _ = _signing._canonical(header, body, False)
    assert _signing._as_numbers(exact) != exact  # this snapshot holds such floats
    snap["signature"]["mac"] = _signing._hmac(b"s" * 32, exact)
    _session().restore(json.dumps(snap), keys=KEYS, session_id="s")
    with pytest.raises(SnapshotSignatureError):  # but not after the store: as before
        _session().restore(jsonb(json.dumps(snap)), keys=KEYS, session_id="s")


def test_a_snapshot_without_such_floats_is_signed_as_before() -> None:
    chef, _ = _conversation("openai")  # Chat holds arguments as text: no float values
    snap = chef.snapshot(keys=KEYS, session_id="s")
    header = {k: v for k, v in snap["signature"].items() if k != "mac"}
    body = {k: v for k, v in snap.items() if k != "signature"}
    exact, _ = _signing._canonical(header, body, False)
    assert _signing._as_numbers(exact) is exact
    assert snap["signature"]["mac"] == _signing._hmac(b"s" * 32, exact)


@pytest.mark.parametrize(
    ("a", "b"),
    [(1e20, 10**20), (-0.0, 0), (0.0, 0), (1.0, 1), ({"x": [2.0]}, {"x": [2]})],
)
def test_the_fakes_compare_numbers_by_value(a: Any, b: Any) -> None:
    assert by_value(a) == by_value(b)
    assert by_value(2.5) != by_value(2) and by_value("1e+20") != by_value(1e20)
    assert by_value(1e23) == by_value(10**23) != by_value(99999999999999991611392)


def test_a_signed_text_read_with_no_float_is_checked_without_byte_searches(
    tmp_path: Any,
) -> None:
    """A signed restore of text, and a keyed store's load, read every number: when no float
    was read, the canonical bytes cannot hold one that orjson or a decimal store writes
    otherwise, so the float searches (`_json._other_floats`, `_signing._as_numbers`) are
    skipped; the signature is checked as strictly, and text holding floats is searched."""
    from contextchef import _json
    from contextchef.stores import SessionSync, SQLiteSessionStore

    searched: list[str] = []
    other, numbers = _json._other_floats, _signing._as_numbers
    plain, _ = _conversation("openai", {"a": 1, "b": 2, "c": 3})  # integers only
    floats, _ = _conversation("anthropic")  # 1e20, -0.0 and 2.5 as JSON values
    texts = {
        n: json.dumps(c.snapshot(keys=KEYS, session_id="s"))
        for n, c in (("plain", plain), ("floats", floats))
    }
    assert "1e+20" in texts["floats"] and "e+" not in texts["plain"].replace("1e+2", "")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_json, "_other_floats", lambda d: searched.append("bytes") or other(d))
        patch.setattr(_signing, "_as_numbers", lambda d: searched.append("numbers") or numbers(d))
        _session().restore(texts["plain"], keys=KEYS, session_id="s")
        assert searched == []
        with pytest.raises(SnapshotSignatureError) as caught:  # still checked
            _session().restore(texts["plain"].replace("Add", "Sub"), keys=KEYS, session_id="s")
        assert caught.value.problem == "mismatch"
        _session().restore(texts["floats"], keys=KEYS, session_id="s")
        assert searched  # a float was read: searched as before
        searched.clear()

        def no_json(*_: object, **__: object) -> None:
            raise AssertionError("json wrote the canonical form")

        patch.setattr(_signing, "json", SimpleNamespace(dumps=no_json))  # a host's decode too
        _session().restore(json.loads(texts["plain"]), keys=KEYS, session_id="s")
        patch.undo()
        store = SQLiteSessionStore(tmp_path / "s.db", keys=KEYS)
        SessionSync(store, "s").save(plain)  # signing a live session searches (no reader)
        searched.clear()
        assert SessionSync(store, "s").load_into(_session())
        assert searched.count("numbers") <= 1  # the store's signed head (a few fields) only


GAIN = {
    "name": "set_gain",
    "description": "Set the gain.",
    "input_schema": {
        "type": "object",
        "properties": {
            "gain": {"type": "number", "minimum": -0.0, "maximum": 3.4028234663852886e38}
        },
    },
}


@pytest.mark.parametrize("runtime", [False, True], ids=["registered", "runtime"])
@pytest.mark.parametrize("target", ["anthropic", "openai", "gemini"])
def test_tools_with_such_floats_are_the_same_after_a_decimal_store(
    target: str, runtime: bool
) -> None:
    """Break-it round 34 (#3): a tool schema holding float32's max (3.4028234663852886e38)
    comes back from ``jsonb`` as an integer. The signature verified, then the runtime tool
    was refused as defined otherwise (`SnapshotMismatchError`), and a registered one made the
    next compile report a tools edit (the prompt cache restarting). Both are the definitions
    signed (`_signing.as_decimal_store`): no edit, and the tools go out as first sent."""

    def make() -> ContextChef:
        chef = ContextChef()
        if runtime:
            chef.register_runtime_tool(json.loads(json.dumps(GAIN)), handler=lambda gain=1.0: "ok")
        else:
            chef.register_tools([json.loads(json.dumps(GAIN))])
        return chef

    fake = fake_for(target).script(text("Set."), text("Again."))
    chef = make()
    chef.set_history([user("Set the gain.")])
    first = _compile(chef, target)
    chef.ingest(send(target, fake, first.payload))
    chef.append(user("and again"))
    stored = jsonb(json.dumps(chef.snapshot(keys=KEYS, session_id="s")))
    assert "340282346638528860000000000000000000000" in stored
    worker = make()
    worker.restore(stored, keys=KEYS, session_id="s")
    request = _compile(worker, target)
    assert not [e for e in request.edits if e.kind == "tools"]
    tools = {"anthropic": "tools", "openai": "tools", "gemini": "config"}[target]
    assert json.dumps(request.payload[tools]) == json.dumps(first.payload[tools])
    worker.ingest(send(target, fake, request.payload))
    assert fake.violations == ()
