"""`echo`: the one way a message quotes text it did not write (a model's or a host's).

Error results go back to the model and stay in the history, re-sent on every later turn,
so text quoted from the model's own output (a hallucinated tool name, a namespace action,
a toolkit or skill name, an argument value in a validation error, an id) is capped: a
50,000-character name costs a few hundred characters in the result, not 50,000, and the
cut is named (``"qqq… (50,000 chars)"``) so the model knows its text was longer.
"""

from __future__ import annotations

__all__ = ["ECHO_CHARS", "echo", "printed"]

ECHO_CHARS = 120
"""Longest piece of a model's own text quoted back in a message, in characters."""


def echo(text: str, limit: int = ECHO_CHARS) -> str:
    """`text` as a message quotes it: whole up to `limit` characters, else cut.

    Args:
        text: The text to quote.
        limit: Most characters of `text` kept (default `ECHO_CHARS`).

    Returns:
        `text` when it has at most `limit` characters, else its first `limit` followed
        by ``… (<length> chars)``, e.g. ``"qqq… (50,000 chars)"``; never longer than
        `limit` plus 25 characters.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} chars)"


def printed(value: object) -> str:
    """``str(value)`` for a message; never raises (a host's exception may fail to print)."""
    try:
        return str(value)
    except Exception as exc:  # a hostile __str__: still answered, by its type
        return f"<a {type(value).__name__} that cannot be printed: {type(exc).__name__}>"
