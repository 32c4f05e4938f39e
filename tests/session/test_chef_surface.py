"""`ContextChef` is a facade of parts: a budget on its public members, none of them big.

Issue 22 replaced the 400-line budget on `session/_chef.py` (met by splitting the class
into six mixins) with a budget on what a user has to learn: the public methods and
properties of `ContextChef`. The budget is the surface the session has today (46 methods,
21 properties: 67 members; the catalog's cost plan left for `contextchef.analysis`) with
no room to grow silently; a new public member means
raising a number here, on purpose, in review.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from contextchef import ContextChef

MAX_METHODS = 47  # +1 (issue 25): context_usage, tokens used / budget / headroom per target
MAX_PROPERTIES = 22  # +1 (issue 24): cache_reports, one CacheReport per ingested response
MAX_MEMBERS = MAX_METHODS + MAX_PROPERTIES  # 69

MAX_BODY_LINES = 12
"""Most lines of code (docstring left out) in one public member: the facade delegates."""


def _public() -> tuple[list[str], list[str]]:
    methods, properties = [], []
    for name in dir(ContextChef):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(ContextChef, name)
        (properties if isinstance(member, property) else methods).append(name)
    return methods, properties


def test_public_members_stay_within_the_budget() -> None:
    methods, properties = _public()
    assert len(methods) <= MAX_METHODS, f"{len(methods)} public methods: {methods}"
    assert len(properties) <= MAX_PROPERTIES, f"{len(properties)} properties: {properties}"
    assert len(methods) + len(properties) <= MAX_MEMBERS


def test_spec_001_names_are_all_there() -> None:
    methods, properties = _public()
    for name in ("compile", "ingest", "execute", "check_tool_call", "run_tools", "snapshot"):
        assert name in methods
    for name in ("view", "registry", "history", "pruner", "tools", "mode"):
        assert name in properties


def test_the_session_is_composed_not_mixed_in() -> None:
    assert ContextChef.__mro__ == (ContextChef, object)
    chef = ContextChef()
    parts = vars(chef)
    state = parts["_state"]
    # every part holds the one SessionState (a restore changes it in place)
    for name in ("_dispatcher", "_skills", "_maintenance", "_compiler"):
        assert vars(parts[name])["_state"] is state, name
    # no attribute appears later (the gate's decisions used to be kept lazily)
    before = set(parts)
    chef.check_tool_call({"id": "c1", "name": "nothing", "arguments": {}})
    chef.restore(chef.snapshot(), allow_unsigned=True)
    assert set(vars(chef)) == before and vars(chef)["_state"] is state


def test_every_public_member_delegates() -> None:
    source = textwrap.dedent(inspect.getsource(ContextChef))
    (cls,) = ast.parse(source).body
    assert isinstance(cls, ast.ClassDef)
    for node in cls.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name.startswith("_"):
            continue
        body = node.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        assert body, node.name
        lines = (body[-1].end_lineno or 0) - body[0].lineno + 1
        assert lines <= MAX_BODY_LINES, f"ContextChef.{node.name} has {lines} lines of code"
