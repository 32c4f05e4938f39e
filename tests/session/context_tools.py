"""What the context-management tests share: the model, a tool with big results, a
summarizer that records its inputs, and the host's step after each reply."""

from __future__ import annotations

from contextchef import ContextChef, ToolCall, user

OPUS = "claude-opus-5-5"


class Summaries:
    """A summarizer that records what it was given."""

    def __init__(self) -> None:
        self.inputs: list[str] = []

    def __call__(self, transcript: str) -> str:
        self.inputs.append(transcript)
        return f"Summary {len(self.inputs)}: logs were read."


def recall(chef: ContextChef, query: str) -> tuple[str, str, str]:
    """``search_archive`` for `query`: the hit list, the first hit's place (handle and
    offset) and the page read from it (up to 60,000 bytes), as the model would."""
    hits = chef.execute(ToolCall(id="s", name="search_archive", arguments={"query": query}))
    handle, _, rest = hits.result.content.splitlines()[0].partition(" offset ")
    args = {"handle": handle, "offset": int(rest.split(" ")[0]), "length": 60_000}
    page = chef.execute(ToolCall(id="r", name="search_archive", arguments=args))
    return hits.result.content, f"{handle} {rest.split(' ')[0]}", page.result.content


def next_turn(chef: ContextChef, calls: tuple[ToolCall, ...], k: int) -> None:
    """Run the reply's calls, or, after an answer, add the user's next message."""
    if calls:
        chef.run_tools(calls)
    else:
        chef.append(user(f"and then {k}?"))


def read_log(path: str) -> str:
    """Read a log file.

    Args:
        path: The file.
    """
    return f"{path}: " + "line of log output\n" * 2_700  # about 12,000 estimated tokens
