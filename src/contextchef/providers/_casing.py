"""Field names in the two spellings an SDK takes (providers layer).

google-genai's pydantic models take each field in snake_case or camelCase
(``max_output_tokens`` / ``maxOutputTokens``), and its REST bodies use camelCase: the
tool-choice check, the ``extra`` check and the Gemini parser read both.
"""

from __future__ import annotations

__all__ = ["camel", "snake"]


def camel(key: str) -> str:
    """``max_output_tokens`` -> ``maxOutputTokens`` (a camelCase key is kept)."""
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


def snake(key: str) -> str:
    """``maxOutputTokens`` -> ``max_output_tokens`` (a snake_case key is kept)."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key).lstrip("_")
