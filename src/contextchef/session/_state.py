"""`SessionState`: the data of one session, whose JSON form is the snapshot (session layer).

Everything that decides the next compile lives here: system prompt, history, loaded tools,
toolkits and skills, announcements, dynamic state, the anchor line, a pending handoff, and
the policy (exposure patterns, mode, whitelist, blocklist, last strategy), which a restore
keeps from the host. `SessionState.to_dict` is the snapshot body (its form is declared in
`contextchef.session._snapshot_form`); `check_shape` checks a snapshot against that form
before `SessionState.from_dict` builds a new state, so a corrupt snapshot changes nothing.

Code is not state: tools and handlers, hooks, event handlers and the implicit-context
hook stay with the objects that own them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contextchef._errors import UsageError
from contextchef._json import thaw
from contextchef.exposure._policy import ExposurePolicy, Mode
from contextchef.history._forms import checked_history, forms_over
from contextchef.history._lazy import lazy_history, vouched
from contextchef.history._messages import Message
from contextchef.history._notes import NoteBudget
from contextchef.providers._retry import SummaryRetry
from contextchef.session._ledger import Ledger
from contextchef.session._volatile import Announcement, dynamic_state_data, render_dynamic_state

if TYPE_CHECKING:
    from pydantic import BaseModel

    from contextchef.session._snapshot_form import SnapshotForm

__all__ = ["SessionState", "check_shape"]


@dataclass(kw_only=True)
class SessionState:
    """The session's data (see the module docstring). Mutated only by the session."""

    system: str = ""
    history: tuple[Message, ...] = ()
    default_defer: bool = False
    defer: tuple[str, ...] = ()
    pin: tuple[str, ...] = ()
    mode: Mode | None = None
    """The mode chosen with ``set_mode`` (None: every tool)."""
    whitelist: Mode | None = None
    """An applied pruning result; it narrows `mode`, never replaces it."""
    blocked: tuple[str, ...] = ()
    loaded: set[str] = field(default_factory=set)
    """Wire names whose schemas the model loaded with ``tool_search`` or a toolkit load."""
    loaded_toolkits: tuple[str, ...] = ()
    loaded_skills: tuple[str, ...] = ()
    """Names of the skills loaded (by the model or the host), sorted."""
    strategy: str = "client"
    """The strategy of the last compile (the gate allows what it sent)."""
    target: str | None = None
    """The target of the last compile (whose provider-side search results count)."""
    model: str | None = None
    """The model of the last native compile (whose rules say how loads are revealed)."""
    announcements: dict[str, Announcement] = field(default_factory=dict)
    dynamic_state: BaseModel | Mapping[str, Any] | None = None
    anchor: str = ""
    new_context_pending: bool = False
    ledgers: dict[str, Ledger] = field(default_factory=dict)
    """What each target was sent (see `contextchef.session._ledger`)."""
    compiled: str | None = None
    """The target of the last compile (its ledger gets the next response's id)."""
    noticed: set[str] = field(default_factory=set)
    """Digests of the budget notices given (`providers._budget.notice_digest`): once each."""
    retry: SummaryRetry = field(default_factory=SummaryRetry)
    """When a failed automatic compaction is tried again (kept by snapshots while waited)."""
    budget: NoteBudget | None = None
    """The last local compile's trigger and fixed part: a compaction's notes fit under it."""
    withdrawn: dict[str, str] = field(default_factory=dict)
    """Wire name -> why: tools their source took back (an MCP server removed them or
    disconnected). Snapshots record them (`tools._recorded`): restored where not listed."""

    def policy(self) -> ExposurePolicy:
        """The exposure policy: patterns, then the mode and whitelist (intersected)."""
        modes = tuple(m for m in (self.mode, self.whitelist) if m is not None)
        return ExposurePolicy(
            default_defer=self.default_defer, defer=self.defer, pin=self.pin, modes=modes
        )

    def to_dict(self, base: tuple[Sequence[Message], Mapping[str, Any]] | None = None) -> Any:
        """The JSON form; shares the unchanged parts of `base` (history, its form; `forms_over`)."""
        data, (before, form) = self.dynamic_state, base or ((), {})
        ledgers, old = sorted(self.ledgers.items()), form.get("ledgers", {})
        forms = forms_over(self.history, before, form.get("history", []))
        return {
            "system": self.system,
            "history": forms,
            "exposure": {
                "default_defer": self.default_defer,
                "defer": list(self.defer),
                "pin": list(self.pin),
            },
            "mode": self.mode.name if self.mode else None,
            "whitelist": self.whitelist.to_dict() if self.whitelist else None,
            "blocked": list(self.blocked),
            "loaded_tools": sorted(self.loaded),
            "loaded_toolkits": list(self.loaded_toolkits),
            "loaded_skills": list(self.loaded_skills),
            "strategy": self.strategy,
            "target": self.target,
            "model": self.model,
            "announcements": [a.to_dict() for a in self.announcements.values()],
            "dynamic_state": None if data is None else thaw(dynamic_state_data(data)),
            "anchor": self.anchor,
            "new_context_pending": self.new_context_pending,
            "ledgers": {t: lg.to_dict(self.history, forms, old.get(t)) for t, lg in ledgers},
            "compiled": self.compiled,
            "noticed": sorted(self.noticed),
            **({"retry": [self.retry.failures, self.retry.at]} if self.retry.failures else {}),
            **({"budget": [self.budget.trigger, self.budget.fixed]} if self.budget else {}),
        }

    @classmethod
    def from_dict(
        cls, data: SnapshotForm, *, signed: bool = False, owned: bool = False
    ) -> SessionState:
        """Build a state from the data of a snapshot checked by `check_shape` (`signed`: HMAC'd).

        `owned`: `data` is the restore's own, kept unchanged: the history messages it
        vouches for keep their forms and build their parts when read (`history._lazy`).

        The policy fields (exposure patterns, mode, whitelist, blocklist, strategy) keep
        their defaults: they are the host's (`contextchef.exposure._restore`).

        Raises:
            UsageError: A malformed ledger (named in the message).
            CorruptHistoryError: The history is malformed.
        """
        made, forms = None if signed else dict[Any, Any](), data["history"]
        history = lazy_history(forms, vouched(data, made)) if owned else checked_history(forms)
        ledgers = {
            target: Ledger.from_dict(
                raw, history, forms, name=target, made=made, version=data["version"], owned=owned
            )
            for target, raw in data["ledgers"].items()
        }
        return cls(
            system=data["system"],
            history=history,
            loaded=set(data["loaded_tools"]),
            loaded_toolkits=tuple(data["loaded_toolkits"]),
            loaded_skills=tuple(sorted(set(data["loaded_skills"]))),
            target=data["target"],
            model=data["model"] if data["target"] is not None else None,
            announcements={a["id"]: Announcement(**a) for a in data.get("announcements", [])},
            dynamic_state=thaw(data["dynamic_state"]),  # the snapshot stays the caller's
            anchor=data["anchor"],
            new_context_pending=data["new_context_pending"],
            ledgers=ledgers,
            compiled=data["compiled"],
            noticed=set(data.get("noticed", ())),
            retry=SummaryRetry.read(data.get("retry")),  # no failed compaction waited out
            budget=NoteBudget.read(data.get("budget")),  # none in older snapshots
        )

    def copy(self) -> SessionState:
        """A copy whose containers are not shared with this state."""
        return dataclasses.replace(
            self,
            loaded=set(self.loaded),
            announcements=dict(self.announcements),
            ledgers=dict(self.ledgers),
            retry=dataclasses.replace(self.retry),
        )

    def adopt(self, other: SessionState) -> None:
        """Take every field of `other` in place (a restore or a rollback).

        The session's parts hold this one object, so it is changed, never replaced.
        """
        for item in dataclasses.fields(self):
            setattr(self, item.name, getattr(other, item.name))


def check_shape(data: object) -> SnapshotForm:
    """`data` checked against the snapshot's form (`SnapshotForm`), before anything is built.

    Raises:
        UsageError: The first malformed field, named, with what it must be, or a dynamic
            state holding NaN or infinity (every later compile would refuse it).
    """
    from contextchef.session._snapshot_form import check_form  # imports pydantic

    form = check_form(data)
    if form["dynamic_state"] is not None:
        try:
            render_dynamic_state(form["dynamic_state"])
        except UsageError as exc:  # every later compile would refuse it: named here
            raise UsageError(
                f"snapshot field 'dynamic_state': {exc}; nothing was restored"
            ) from None
    return form
