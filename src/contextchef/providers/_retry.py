"""A failed automatic compaction: reported once, the conversation sent as it is, tried later.

The session compacts on its own (`ContextChef(on_overflow=...)`, past
`ContextPolicy.compact_at` or `OverflowHandoff.max_history_tokens`) with the host's
summarizer. When that summarizer returns no summary (``""`` or only whitespace), something
that is not text, or raises, `contextchef.compact` keeps the history as it was (replacing
the turns with nothing would lose them). Before, the compile raised that `UsageError`, and
every later compile called the summarizer and raised it again: the agent could not go on.
Now the failure is handled like the other summarizer failures (`_budget.summary_notice`): a
``summary_failed`` notice and a warning, the request compiled and sent uncompacted, and a
back-off instead of a summarizer call on every turn (`SummaryRetry`).

An explicit `ContextChef.compact` still raises: the host asked for that compaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contextchef._errors import UsageError
from contextchef.providers._reading import ResponseNotice

__all__ = ["SummaryRetry"]

logger = logging.getLogger("contextchef")

LONGEST_WAIT = 64
"""The most messages a failed compaction waits for before the next try."""


@dataclass(kw_only=True)
class SummaryRetry:
    """When the session's automatic compaction tries its summarizer again after a failure.

    After `failures` failures in a row, the next try waits until the history holds
    ``2 ** (failures + 1)`` messages more than at the last one (4, 8, 16... up to
    `LONGEST_WAIT`; a turn adds two or more): in a loop whose summarizer keeps failing, a
    call at the first due turn, then 2, 4, 8... turns later; at once again after one
    that worked.
    A snapshot keeps it while a failure is waited out (``retry``), so a restored session
    (`SessionSync`, a worker per turn) waits as the live one would. The wait never passes
    `LONGEST_WAIT` messages from the history's length (`at` above it, after a rollback or
    in an edited snapshot, counts from the length), so no value of it stops compaction.
    """

    failures: int = 0
    """Failed compactions in a row."""
    at: int = 0
    """The history's length in messages at the last failure."""

    @classmethod
    def read(cls, form: Sequence[int] | None) -> SummaryRetry:
        """The retry of a snapshot's ``[failures, at]`` (None: no failure waited out)."""
        return cls() if form is None else cls(failures=form[0], at=form[1])

    def wait(self) -> int:
        """Messages the next try waits for after `at` (``2 ** (failures + 1)``, capped)."""
        return min(1 << min(self.failures + 1, LONGEST_WAIT.bit_length()), LONGEST_WAIT)

    def run(
        self, compact: Callable[[], object], length: int, *, forced: bool = False
    ) -> tuple[ResponseNotice, ...] | None:
        """Call `compact` unless a failure is waited out; None when it compacted.

        Args:
            compact: The session's compaction (raises `UsageError` when the summarizer
                failed; see `contextchef.compact`).
            length: The history's length in messages now.
            forced: A compaction that cannot wait (a provider switch must summarize the
                last provider's compaction before anything is sent to another): called
                now, and its failure raised.

        Returns:
            None when it compacted; ``()`` when it is waited out; else one
            ``summary_failed`` notice (`reason`: ``raised`` when the summarizer raised,
            ``no_text`` when it returned no summary), also logged as a warning with the
            error and the summarizer's own exception in the traceback.

        Raises:
            UsageError: `forced` and the summarizer failed (chained with ``from`` to the
                summarizer's exception when it raised).
        """
        wait = self.wait()
        self.at = min(self.at, length)  # a shorter history (a rollback): wait from there
        if not forced and self.failures and length < self.at + wait:
            return ()
        try:
            compact()
        except UsageError as exc:
            if forced:
                raise
            self.failures, self.at = self.failures + 1, length
            return (self._failed(exc, self.wait()),)
        self.failures = 0
        return None

    def _failed(self, error: UsageError, wait: int) -> ResponseNotice:
        cause = error.__cause__
        notice = ResponseNotice(
            kind="summary_failed",
            reason="raised" if cause is not None else "no_text",
            detail=f"the on_overflow summarizer failed ({error}); the conversation is sent "
            f"uncompacted, and the session tries to compact again once {wait} more messages "
            f"are in the history ({self.failures} failure(s) in a row); fix the summarizer, "
            "or call chef.compact() yourself",
        )
        logger.warning("contextchef: %s", notice.detail, exc_info=error)
        return notice
