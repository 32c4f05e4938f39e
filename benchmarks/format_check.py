"""What asserting JSON Schema ``format`` costs per gate call (break-it 19).

jsonschema's FormatChecker checks ``uri`` and ``date-time`` only with extra packages
(rfc3987, rfc3339-validator); this lists what it catches with what is installed, and
times it against jsonschema-rs (a dependency already), which checks every format in
Rust: the gate's ``format_errors`` (tools/_validate.py) runs jsonschema-rs with
``validate_formats=True`` on schemas that name a format. Figures are per call on valid
arguments (the usual case) for a three-format schema.

Run: python benchmarks/format_check.py
"""

from __future__ import annotations

import gc
import timeit

import jsonschema
import jsonschema_rs

from contextchef._json import freeze
from contextchef.tools._validate import format_errors, validation_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "ip": {"type": "string", "format": "ipv4"},
        "url": {"type": "string", "format": "uri"},
        "when": {"type": "string", "format": "date-time"},
    },
}
ARGS = {"ip": "1.1.1.1", "url": "https://x.com", "when": "2026-01-01T00:00:00Z"}


def main() -> None:
    cls = jsonschema.validators.validator_for(SCHEMA)
    plain = cls(SCHEMA)
    checked = cls(SCHEMA, format_checker=cls.FORMAT_CHECKER)
    bad = {"ip": "not-an-ip", "url": "not a uri", "when": "yesterday"}
    caught = sorted(e.validator_value for e in checked.iter_errors(bad))
    print("formats checked with what is installed:", caught)
    rs = jsonschema_rs.validator_for(SCHEMA, validate_formats=True)
    print("jsonschema-rs catches:", [e.message for e in rs.iter_errors(bad)])
    frozen = freeze(SCHEMA)
    cases = {
        "jsonschema, no format check": lambda: list(plain.iter_errors(ARGS)),
        "jsonschema + FormatChecker": lambda: list(checked.iter_errors(ARGS)),
        "jsonschema-rs, formats": lambda: rs.is_valid(ARGS),
        "gate format_errors": lambda: format_errors(frozen, ARGS),
        "gate validation_errors": lambda: validation_errors(frozen, ARGS),
    }
    runs = 20_000
    for name, run in cases.items():
        gc.collect()
        seconds = min(timeit.repeat(run, number=runs, repeat=5))
        print(f"{name:28} {seconds / runs * 1e6:6.2f} µs per call")


if __name__ == "__main__":
    main()
