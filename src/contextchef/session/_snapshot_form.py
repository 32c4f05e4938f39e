"""The snapshot's form, declared once: typed dicts checked by one pydantic `TypeAdapter`.

`ContextChef.snapshot` writes this form (`SessionState.to_dict`, `Ledger.to_dict`, the
header and tool record of `contextchef.session._snapshot`) and every reader checks a
snapshot against it before building anything (`check_form`). What the form cannot say
(a ledger's marks against its entries, digests, a history message's parts, a tool or skill
definition) is checked by the readers that build those values.

Optional keys are only those the writer leaves out: a ledger's ``bindings`` (no thinking
bound), ``chain`` (no chain built), ``sent`` (nothing kept, no usage reported), ``undo``
(no edit pending), ``shared`` (version 1 wrote none), ``texts`` (nor 2), a mark's ``tools``
(no tool change), the snapshot's ``announcements`` (spec 001: none without it), and those
older version 5 writers did not write: a ledger's ``ir_digest``, the snapshot's ``noticed``
(the budget notices given), ``retry`` (written only while a failed compaction is waited
out), ``budget`` (`NoteBudget`, what a compaction sizes its notes by) and the tool record's
``shape`` (`contextchef.deferred._shape`; not checked without it). The rest, the
digests included, is required: a snapshot missing a field is refused.

This module imports pydantic; it is imported when a snapshot is read, never by
``import contextchef``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

import pydantic
from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import NotRequired, TypedDict

from contextchef._errors import UsageError, shown
from contextchef._json import is_unicode
from contextchef.providers import TARGETS
from contextchef.session._strategies import STRATEGIES

__all__ = ["LedgerForm", "MarkForm", "ModeForm", "SnapshotForm", "check_form"]


def _unicode(value: str) -> str:
    if not is_unicode(value):
        raise ValueError("must be valid Unicode text (it holds a lone surrogate)")
    return value


def _one_of(choices: Sequence[str], *, null: bool = False) -> Callable[[Any], Any]:
    wanted = f"must be one of {sorted(choices)}{' or null' if null else ''}"

    def check(value: Any) -> Any:
        if value is not None and value not in choices:
            raise ValueError(wanted)
        return value

    return check


Text = Annotated[str, AfterValidator(_unicode)]
"""Text replayed into requests: valid Unicode (no lone surrogate)."""
Size = Annotated[int, Field(ge=0)]
"""A count or index."""
Digest = Annotated[str, Field(pattern="^[0-9a-f]{16}$")]
Target = Annotated[str, AfterValidator(_one_of(TARGETS))]
TargetOrNone = Annotated[str | None, AfterValidator(_one_of(TARGETS, null=True))]
Strategy = Annotated[str, AfterValidator(_one_of(tuple(STRATEGIES)))]
Channel = Literal["auto", "user_tail", "system"]

_STRICT = ConfigDict(strict=True)
_CLOSED = ConfigDict(strict=True, extra="forbid")


@with_config(_CLOSED)
class StatedForm(TypedDict, total=False):
    """`Stated.to_dict`: the volatile blocks stated (empty ones left out)."""

    dynamic_state: Text
    implicit_context: Text
    announcements: Text
    system: Text
    memories: Text


@with_config(_CLOSED)
class ToolStateForm(TypedDict, total=False):
    """`ToolState.to_dict`: tool changes stated and tools revealed."""

    added: list[str]
    removed: list[str]
    revealed: list[str]
    defined: dict[str, str]
    """Wire name -> the JSON text of the definition sent."""
    sent: bool


@with_config(_STRICT)
class MarkForm(TypedDict):
    """`Mark.to_dict`: a ledger's size after one compile."""

    history: Size
    ir: Size
    wire: Size
    stated: StatedForm
    injected: Size
    tools: NotRequired[ToolStateForm]


@with_config(_CLOSED)
class ChainForm(TypedDict):
    """`providers._chain.chain_form`: a hex digest per wire entry, the first naming a tool."""

    digests: list[str]
    references: dict[str, Size]
    wire: NotRequired[str]  # the entries' digests it was built over; then the entries
    checked: NotRequired[Size]  # found bound after the system and tools digesting to
    under: NotRequired[str]
    tools: NotRequired[str]  # the ledger's tools' `providers._chain.tool_set` digest


@with_config(_CLOSED)
class TextForm(TypedDict):
    """`history._forms.wire_forms`: a wire entry's text held by a history message."""

    at: list[str | Size]
    """Where the text goes in the entry (which holds null there)."""
    message: Size
    path: list[str | Size]
    """Where the text is in the history message's form."""


@with_config(_CLOSED)
class UndoForm(TypedDict):
    """A ledger as `Ledger.to_dict` writes it, without an ``undo`` of its own."""

    shared: NotRequired[Size]
    """How many consumed messages lead the snapshot's history (version 2; none before)."""
    consumed: list[str]
    """A digest per history message consumed after the ``shared`` ones."""
    ir: list[Size | dict[str, Any]]
    """Normalized messages: the index of the history message it equals, else its
    `Message.to_dict` (checked by `message_from_dict`)."""
    ir_digest: NotRequired[str]  # of ``ir`` (`history._forms.ir_form`; none before it)
    wire: list[pydantic.InstanceOf[dict[str, Any]]]  # an object each, taken as it is (no copy)
    """Wire entries as sent (checked against ``wire_digests``), but for ``texts``."""
    texts: NotRequired[list[list[TextForm]]]
    """Per wire entry, its long texts the history holds (version 3; none before)."""
    marks: list[MarkForm]
    pending: MarkForm | None
    strip: list[Annotated[list[Size], Field(min_length=2, max_length=2)]]
    """History ranges ``[lo, hi]`` whose thinking is no longer sent."""
    system: Text | None
    tools: list[dict[str, Any]] | None
    strategy: str | None
    rebased: bool
    response_id: str | None
    answered: bool
    system_entries: list[Size]
    wire_digests: list[str]
    """A digest per wire entry (version 4: of its stored form, `texts` and their messages')."""
    blocks: NotRequired[list[list[str]]]  # version 5 on: [consumed, wire] (`history._blocks`)
    record_digest: str
    """A digest of what the ledger replays besides its wire entries."""
    bindings: NotRequired[dict[str, str]]
    """Thinking block key -> fingerprint of the prefix it was produced after."""
    chain: NotRequired[ChainForm]
    """What the bindings are checked against, so a restored session need not rebuild it."""
    sent: NotRequired[dict[str, Any]]  # model, cache report, kept (`providers._sent_form`)


@with_config(_CLOSED)
class LedgerForm(UndoForm):
    """`Ledger.to_dict`: what one target was sent."""

    undo: NotRequired[UndoForm]
    """The ledger before an edit nobody answered yet."""


@with_config(_STRICT)
class ExposureForm(TypedDict):
    default_defer: bool
    defer: list[str]
    pin: list[str]


@with_config(_STRICT)
class ModeForm(TypedDict):
    """`Mode.to_dict`."""

    name: str
    include: list[str]
    read_only: bool
    runtime: bool
    library: bool


@with_config(_STRICT)
class AnnouncementForm(TypedDict):
    id: Text
    content: Text
    channel: Channel


@with_config(_STRICT)
class ToolRecordForm(TypedDict):
    """The registered tools the snapshot was taken with."""

    fingerprint: str
    names: list[str]
    digests: NotRequired[list[Digest]]  # per name, of its definition (none before it)
    runtime: list[str]
    definitions: list[dict[str, Any]]
    """Runtime tools' definitions (checked by `tool_from_dict`)."""
    definition_digests: NotRequired[list[Any]]  # one per definition (`tools._recorded`)
    shape: NotRequired[dict[str, Text]]  # `deferred._shape.tools_shape` (none before it)
    withdrawn: NotRequired[list[dict[str, Any]]]  # checked by `tools._recorded` (none before)


@with_config(_STRICT)
class SnapshotForm(TypedDict):
    """`ContextChef.snapshot`: the header, `SessionState.to_dict`, tools and skills."""

    format: Literal["contextchef.snapshot"]
    version: Literal[1, 2, 3, 4, 5, 6]
    system: Text
    history: list[pydantic.InstanceOf[dict[str, Any]]]  # built from (`history._built`), not copied
    """`Message.to_dict` values (checked by `message_from_dict`)."""
    exposure: ExposureForm
    mode: str | None
    whitelist: ModeForm | None
    blocked: list[str]
    loaded_tools: list[str]
    loaded_toolkits: list[str]
    loaded_skills: list[str]
    strategy: Strategy
    target: TargetOrNone
    model: str | None
    announcements: NotRequired[list[AnnouncementForm]]
    dynamic_state: dict[str, Any] | None
    anchor: Text
    new_context_pending: bool
    ledgers: dict[Target, LedgerForm]
    compiled: TargetOrNone
    noticed: NotRequired[list[Digest]]  # budget notices given (none before this field)
    retry: NotRequired[Annotated[list[Size], Field(min_length=2, max_length=2)]]
    """`SummaryRetry`'s failures in a row and the history's length at the last one."""
    budget: NotRequired[Annotated[list[Size], Field(min_length=2, max_length=2)]]  # NoteBudget
    tools: ToolRecordForm
    skills: list[dict[str, Any]]
    """`Skill.to_dict` values (checked by `parse_skill`)."""


@functools.cache
def _adapter() -> TypeAdapter[SnapshotForm]:
    return TypeAdapter(SnapshotForm)


def check_form(data: object) -> SnapshotForm:
    """`data` checked against `SnapshotForm` (a new dict; nested free-form values shared).

    Raises:
        UsageError: The first field that does not fit, named with what it must be.
    """
    if isinstance(data, Mapping) and type(data) is not dict:  # any Mapping, as typed
        data = dict(data)
    try:
        return _adapter().validate_python(data)
    except ValidationError as exc:
        first, *rest = exc.errors()
        loc, tags = tuple(first["loc"]), {*first["loc"][-1:], *(e["loc"][-1] for e in rest[:1])}
        if tags == {"str", "constrained-int"} and tuple(rest[0]["loc"][:-1]) == loc[:-1]:
            first = {**first, "loc": loc[:-1], "type": "key_or_index"}  # `str | Size`: both
        raise UsageError(f"{_problem(first)}; nothing was restored") from None


_WANTED = {
    "bool_type": "true or false",
    "int_type": "an integer",
    "string_type": "text",
    "dict_type": "an object",
    "is_instance_of": "an object",
    "list_type": "a list",
    "none_required": "null",
    "string_pattern_mismatch": "a digest (16 hex digits)",
}


def _path(loc: Sequence[int | str]) -> str:
    """Where a field is: ``snapshot ledger 'openai' field 'marks' [0] 'history'``."""
    parts = [f"[{k}]" if isinstance(k, int) else shown(k, 40) for k in loc if k != "[key]"]
    if len(loc) >= 3 and loc[0] == "ledgers" and loc[2] != "[key]":
        return f"snapshot ledger {parts[1]} field {' '.join(parts[2:])}"
    return f"snapshot field {' '.join(parts)}" if parts else "a snapshot"


def _problem(error: Any) -> str:
    """One pydantic error as a sentence naming the field and what is valid."""
    loc, kind, value = tuple(error["loc"]), error["type"], error.get("input")
    ctx = error.get("ctx") or {}
    if loc[:1] == ("ledgers",) and loc[-1:] == ("[key]",):
        return (
            f"snapshot field 'ledgers' has a ledger for {shown(value, 40)}; targets are "
            f"{list(TARGETS)}"
        )
    where = _path(loc)
    if kind == "missing":
        return f"{where} is missing (a snapshot has every field ContextChef.snapshot() writes)"
    if kind == "extra_forbidden":
        return f"{where} is not a field of this form"
    if kind == "value_error":
        return f"{where} {ctx.get('error')}"
    if kind == "literal_error":
        return f"{where} must be {ctx.get('expected')}, got {shown(value, 40)}"
    if kind == "key_or_index":  # `str | Size` (`check_form`)
        return f"{where} must be a key (text) or an index (an integer >= 0), got {value!r:.40}"
    if kind == "greater_than_equal":
        return f"{where} must be an integer >= {ctx.get('ge')}, got {shown(value, 40)}"
    if kind in ("too_short", "too_long"):
        return f"{where} must hold exactly 2 items ([lo, hi])"
    wanted = _WANTED.get(kind) or str(error.get("msg", "of another type")).lower()
    return f"{where} must be {wanted}, got {type(value).__name__}"
