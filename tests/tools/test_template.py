"""Description templates render through the pure channel: deterministic or an error."""

from __future__ import annotations

from typing import Any

import pytest

from contextchef._errors import NondeterminismError, TemplateError
from contextchef.tools._template import render_template

STUBS = (
    "time",
    "now",
    "today",
    "datetime",
    "date",
    "random",
    "uuid",
    "env",
    "environ",
    "getenv",
    "fs",
    "open",
    "read_file",
    "exec",
    "shell",
    "subprocess",
    "http",
    "fetch",
    "request",
    "requests",
)
HELPERS = ("fragment", "tag", "raw", "join", "has", "section")


def render(source: str, **kw: Any) -> str:
    return render_template(source, tool="search_docs", **kw)


# --- helpers ---------------------------------------------------------------------------


def test_fragment_inserts_text_verbatim() -> None:
    frags = {"rules": "Never guess.\n{{ not a template }}"}
    assert render("A {{ fragment('rules') }}", fragments=frags) == (
        "A Never guess.\n{{ not a template }}"
    )


def test_unknown_fragment_lists_available_names() -> None:
    with pytest.raises(TemplateError) as info:
        render("{{ fragment('nope') }}", fragments={"b": "x", "a": "y"})
    assert type(info.value) is TemplateError
    assert info.value.tool == "search_docs"
    assert "'nope'" in str(info.value)
    assert "'a', 'b'" in str(info.value)


def test_fragment_values_must_be_str() -> None:
    with pytest.raises(TemplateError, match="'f'"):
        render("x", fragments={"f": 3})


def test_tag() -> None:
    assert render("{{ tag('usage', 'call me') }}") == "<usage>call me</usage>"


def test_raw_returns_text_unchanged() -> None:
    assert render("{{ raw(t) }}", variables={"t": "<b> & {{x}}"}) == "<b> & {{x}}"
    assert render("{{ raw(3) }}") == "3"


def test_join_default_and_custom_separator() -> None:
    assert render("{{ join(xs) }}", variables={"xs": ["a", 1, True]}) == "a, 1, True"
    assert render("{{ join(xs, ' | ') }}", variables={"xs": ["a", "b"]}) == "a | b"
    assert render("{{ join(xs) }}", variables={"xs": []}) == ""


def test_has_is_true_only_for_allowed_and_passed() -> None:
    source = "{{ has('a') }} {{ has('b') }} {{ has('c') }} {{ has('zzz') }}"
    out = render(source, variables={"a": 1, "c": 3}, allowed=["a", "b"])
    assert out == "True False False False"


def test_has_guards_an_optional_variable() -> None:
    source = "{% if has('limit') %}max {{ limit }}{% else %}no limit{% endif %}"
    assert render(source, variables={"limit": 5}, allowed=["limit"]) == "max 5"
    assert render(source, variables={}, allowed=["limit"]) == "no limit"


@pytest.mark.parametrize("body", ["", "   \n\t", None])
def test_section_is_empty_for_blank_body(body: object) -> None:
    assert render("{{ section('Notes', b) }}", variables={"b": body}) == ""


def test_section_with_body() -> None:
    assert render("{{ section('Notes', 'one\ntwo') }}") == "## Notes\none\ntwo"


def test_deterministic_filters_still_work() -> None:
    out = render(
        "{{ xs | sort | join('-') }} {{ s | upper }}", variables={"xs": [3, 1, 2], "s": "a"}
    )
    assert out == "1-2-3 A"


# --- stubs -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", STUBS)
@pytest.mark.parametrize(
    "form",
    ["{{ %s() }}", "{{ %s.now() }}", "{{ %s.HOME }}", "{{ %s['x'] }}", "{{ %s }}"],
)
def test_every_stub_raises_with_its_source(name: str, form: str) -> None:
    with pytest.raises(NondeterminismError) as info:
        render("prefix " + form % name)
    err = info.value
    assert err.source == name
    assert err.tool == "search_docs"
    assert repr(name) in str(err)
    assert "search_docs" in str(err)
    assert "deterministic" in str(err)
    assert "run time in a tool result" in str(err)


@pytest.mark.parametrize(
    ("source", "stub"),
    [
        ("{{ time.now() }}", "time"),
        ("{{ datetime.datetime.now().isoformat() }}", "datetime"),
        ("{{ uuid.uuid4() }}", "uuid"),
        ("{{ env.HOME }}", "env"),
        ("{{ getenv('HOME') }}", "getenv"),
        ("{{ open('/etc/passwd').read() }}", "open"),
        ("{{ http.get('https://example.com').text }}", "http"),
        ("{{ join([1, today()]) }}", "today"),
        ("{{ tag('t', now) }}", "now"),
        ("{% if random %}x{% endif %}", "random"),
        ("{% for x in fs %}{% endfor %}", "fs"),
        ("{{ now | length }}", "now"),
        ("{{ '%s' | format(now) }}", "now"),
    ],
)
def test_stubs_raise_however_they_are_touched(source: str, stub: str) -> None:
    with pytest.raises(NondeterminismError) as info:
        render(source)
    assert info.value.source == stub


def test_untouched_stub_does_not_raise() -> None:
    assert render("{% if false %}{{ now() }}{% endif %}ok") == "ok"


@pytest.mark.parametrize(
    ("source", "variables"),
    [("{{ [1, 2, 3] | random }}", {}), ("{{ xs | random }}", {"xs": ["a", "b"]})],
)
def test_random_filter_raises(source: str, variables: dict[str, object]) -> None:
    with pytest.raises(NondeterminismError) as info:
        render(source, variables=variables)
    assert info.value.source == "random"
    assert info.value.tool == "search_docs"


def test_nondeterminism_error_is_a_template_error_and_not_wrapped() -> None:
    with pytest.raises(TemplateError) as info:
        render("{{ now() }}")
    assert type(info.value) is NondeterminismError


@pytest.mark.parametrize(
    "source",
    [
        "{{ lipsum() }}",
        "{% for i in range(3) %}{{ i }}{% endfor %}",
        "{{ cycler('a', 'b').next() }}",
        "{{ joiner() }}",
        "{{ dict(a=1) }}",
        "{% set ns = namespace(x=1) %}{{ ns.x }}",
    ],
)
def test_jinja_default_globals_are_absent(source: str) -> None:
    with pytest.raises(TemplateError) as info:
        render(source)
    assert type(info.value) is TemplateError


# --- variables -------------------------------------------------------------------------


def test_allowed_defaults_to_the_keys_of_variables() -> None:
    assert render("{{ a }}-{{ b }}", variables={"a": 1, "b": "x"}) == "1-x"


def test_undeclared_variable_is_named_with_the_allowed_names() -> None:
    with pytest.raises(TemplateError) as info:
        render("{{ secret }}", variables={"secret": "s", "limit": 3}, allowed=["limit"])
    msg = str(info.value)
    assert "'secret'" in msg
    assert "'limit'" in msg
    assert info.value.tool == "search_docs"


def test_undeclared_variable_fails_even_in_a_branch_not_taken() -> None:
    with pytest.raises(TemplateError, match="'typo'"):
        render("{% if false %}{{ typo }}{% endif %}")


def test_allowed_but_missing_variable_raises() -> None:
    with pytest.raises(TemplateError) as info:
        render("{{ limit }}", variables={}, allowed=["limit"])
    assert type(info.value) is TemplateError
    assert "'limit'" in str(info.value)


@pytest.mark.parametrize("name", [*STUBS, *HELPERS])
def test_variable_name_clashing_with_helper_or_stub_is_rejected(name: str) -> None:
    with pytest.raises(TemplateError, match=repr(name)):
        render("x", variables={name: 1})
    with pytest.raises(TemplateError, match=repr(name)):
        render("x", variables={}, allowed=[name])


@pytest.mark.parametrize(
    "value",
    [object(), {1, 2}, b"bytes", {"k": [1, object()]}, {1: "int key"}, float("nan")],
)
def test_non_json_value_is_rejected_naming_the_variable(value: object) -> None:
    with pytest.raises(TemplateError, match="'cfg'"):
        render("x", variables={"cfg": value})


def test_self_referencing_value_is_rejected() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(TemplateError, match="'cfg'"):
        render("x", variables={"cfg": loop})


def test_json_like_values_render() -> None:
    variables = {"s": "é", "i": 1, "f": 1.5, "b": False, "n": None, "d": {"k": [1, "two"]}}
    out = render("{{ s }} {{ i }} {{ f }} {{ b }} {{ n }} {{ d.k[1] }}", variables=variables)
    assert out == "é 1 1.5 False None two"


# --- errors ----------------------------------------------------------------------------


def test_syntax_error_names_tool_and_line() -> None:
    with pytest.raises(TemplateError) as info:
        render("line one\nline two\n{{ oops ")
    assert type(info.value) is TemplateError
    msg = str(info.value)
    assert "search_docs" in msg
    assert "line 3" in msg
    assert info.value.__cause__ is not None


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ x.__class__ }}",
        "{{ x | attr('__class__') }}",
        "{{ xs.append(1) }}",
        "{{ join.__globals__ }}",
        "{{ fragment.__globals__ }}",
        "{{ time.__class__ }}",
    ],
)
def test_sandbox_blocks_escapes(source: str) -> None:
    with pytest.raises(TemplateError) as info:
        render(source, variables={"x": 1, "xs": [1]})
    assert info.value.tool == "search_docs"
    assert info.value.__cause__ is not None


@pytest.mark.parametrize(
    "source", ["{% include 'other' %}", "{% import 'm' as m %}", "{% extends 'base' %}"]
)
def test_templates_cannot_reference_other_templates(source: str) -> None:
    with pytest.raises(TemplateError, match="fragment"):
        render(source)


def test_runtime_python_error_becomes_template_error() -> None:
    with pytest.raises(TemplateError) as info:
        render("{{ 1 / 0 }}")
    assert isinstance(info.value.__cause__, ZeroDivisionError)


# --- determinism -----------------------------------------------------------------------


def test_renders_exact_bytes_every_time() -> None:
    source = (
        "Search the {{ product }} docs.\n"
        "{{ section('Rules', fragment('rules')) }}\n"
        "{{ section('Empty', '') }}"
        "{% for k, v in limits | dictsort %}- {{ k }}: {{ v }}\n{% endfor %}"
        "{{ tag('langs', join(langs)) }}\n"
    )
    kw: dict[str, object] = {
        "variables": {"product": "Acme", "limits": {"z": 2, "a": 1}, "langs": ["en", "fr"]},
        "fragments": {"rules": "Cite sources."},
    }
    expected = (
        "Search the Acme docs.\n## Rules\nCite sources.\n- a: 1\n- z: 2\n<langs>en, fr</langs>\n"
    )
    outputs = [render(source, **kw) for _ in range(5)]
    assert all(out.encode("utf-8") == expected.encode("utf-8") for out in outputs)


def test_trailing_newline_is_kept() -> None:
    assert render("a\n") == "a\n"
