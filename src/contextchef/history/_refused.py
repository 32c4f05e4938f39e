"""A target's verdict on a part it cannot receive, with the reason (`Keeps`).

`normalize` asks the target adapter's ``keeps`` about each reasoning and provider-only
part. A plain False drops the part with a general note; a `Refused` drops it too (it is
falsy) and its `Refused.reason`, written by the provider side that knows the wire
format, goes into the ``dropped_foreign_part`` change: the field that is wrong and what
is valid. The history layer carries the text and reads nothing of the format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from contextchef.history._messages import Part

__all__ = ["Keeps", "Refused"]


@dataclass(frozen=True, slots=True)
class Refused:
    """A falsy ``keeps`` verdict: the part is not sent, for `reason`.

    Attributes:
        reason: What makes the part one the target refuses, naming the field and what
            would be valid (one clause, no trailing period).
    """

    reason: str

    def __bool__(self) -> bool:
        return False


Keeps: TypeAlias = Callable[[Part], "bool | Refused"]
"""A target's test for the parts it can receive (`normalize`'s ``keeps``)."""
