"""The base of a compile: a pure fold over the rollback rules (`session/_rollback.py`)."""

from __future__ import annotations

from dataclasses import replace

from contextchef.providers import ModelRules
from contextchef.session._ledger import Ledger, Mark
from contextchef.session._reveal import ToolState
from contextchef.session._rollback import (
    ROLLBACK_RULES,
    BaseFacts,
    Rollback,
    decide_base,
)

M0 = Mark()
M1 = Mark(history=2, ir=2, wire=2)
M2 = Mark(history=4, ir=4, wire=4, tools=ToolState(sent=True))
M3 = Mark(history=6, ir=6, wire=7, tools=ToolState(sent=True))


def _facts(**kw: object) -> BaseFacts:
    ledger = Ledger(marks=[M0, M1, M2, M3], system_entries=[5])
    base = BaseFacts(
        ledger=ledger,
        rules=ModelRules(model="m", system_messages=True, tool_changes=True),
        start=M3,
        edited_at=None,
        prefix_change=None,
        resend=False,
        stale=False,
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def test_no_reason_continues_from_the_start() -> None:
    assert decide_base(_facts()) == Rollback(mark=M3)


def test_the_earliest_mark_wins() -> None:
    # history edited at 5 (mark M2); system entries refused: before entry 5 (mark M2);
    # tool changes refused: before the first mark that sent one (M1): earliest
    rules = ModelRules(model="m")
    chosen = decide_base(_facts(edited_at=5, rules=rules))
    assert chosen.mark is M1 and chosen.kind == "model" and chosen.at == M1.history


def test_a_refusal_tied_with_the_start_is_no_edit() -> None:
    ledger = Ledger(marks=[M0, M1], pending=M2, system_entries=[])
    facts = _facts(ledger=ledger, start=M1, rules=ModelRules(model="m", system_messages=True))
    # the pending mark sent a tool change, but nobody answered it: nothing to roll back
    assert decide_base(facts) == Rollback(mark=M1)


def test_a_prefix_change_reports_its_kind_at_the_first_mark() -> None:
    facts = _facts(
        edited_at=1, prefix_change="tools", rules=ModelRules(model="m", prefix_check=True)
    )
    chosen = decide_base(facts)
    assert (chosen.mark, chosen.kind, chosen.at) == (M0, "tools", 0)


def test_the_earliest_edited_message_names_the_edit() -> None:
    assert decide_base(_facts(edited_at=5, force=4)).kind == "model"
    assert decide_base(_facts(edited_at=4, force=5)).kind == "history"
    assert decide_base(_facts(edited_at=4, force=4)).kind == "history"


def test_a_rule_is_one_function_in_the_list() -> None:
    def always_first(f: BaseFacts) -> Rollback | None:
        return Rollback(mark=f.ledger.marks[0], kind="model", at=0, rank=1)

    assert decide_base(_facts()).mark is M3
    assert decide_base(_facts(), (*ROLLBACK_RULES, always_first)).mark is M0
