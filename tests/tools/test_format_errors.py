"""``format`` is asserted by jsonschema-rs: what it adds, and only that."""

from __future__ import annotations

from contextchef._json import freeze
from contextchef.tools._validate import format_errors, validation_errors


def test_only_formats_add_lines_and_each_says_its_rule() -> None:
    schema = {
        "type": "object",
        "properties": {"d": {"type": "string", "format": "date"}, "n": {"type": "integer"}},
    }
    assert validation_errors(schema, {"d": "2026-02-30", "n": "x"}) == [
        'd: "2026-02-30" is not a "date" (rule: format)',
        "n: 'x' is not of type 'integer' (rule: type)",
    ]
    assert format_errors(schema, {"d": "2026-02-28"}) == []


def test_unknown_formats_and_schemas_without_formats_pass() -> None:
    assert format_errors({"type": "string", "format": "whatever"}, "x") == []
    frozen = freeze({"type": "object", "properties": {"format": {"type": "string"}}})
    assert format_errors(frozen, {"format": "not a date"}) == []  # a property named format


def test_a_huge_value_is_echoed_cut() -> None:
    (line,) = format_errors({"type": "string", "format": "ipv4"}, "9" * 10_000)
    assert line.endswith(" chars) (rule: format)") and len(line) < 400
