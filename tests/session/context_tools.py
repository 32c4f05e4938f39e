"""What the context-management tests share: the model and a tool with big results."""

from __future__ import annotations

OPUS = "claude-opus-5-5"


def read_log(path: str) -> str:
    """Read a log file.

    Args:
        path: The file.
    """
    return f"{path}: " + "line of log output\n" * 2_700  # about 12,000 estimated tokens
