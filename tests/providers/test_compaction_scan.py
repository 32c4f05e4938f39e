"""`native_base` finds the newest compaction entry whether or not its C pre-scan answers.

`_none_held` reads a ledger's records in C and says "none here" or nothing; the entries
it cannot read (not dicts, a content that is neither text nor a list of dicts) go to the
one-by-one scan. Both must give the index the one-by-one scan alone gives.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from contextchef._records import record
from contextchef.providers import _compacted
from contextchef.providers._compacted import COMPACTION, native_base


def _slow(entries: list[Any]) -> int:
    """`native_base` without the pre-scan (the one-by-one reading it stands in for)."""
    for k in range(len(entries) - 1, -1, -1):
        if _compacted._holds_compaction(entries[k]):
            item = entries[k].get("type") == COMPACTION
            while item and k and _compacted._kept_user_item(entries[k - 1]):
                k -= 1
            return k
    return 0


_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "thinking", COMPACTION])}),
    st.text(max_size=3),  # not a dict: the pre-scan cannot read it
)
_CONTENT = st.one_of(
    st.none(), st.text(max_size=5), st.lists(_BLOCK, max_size=3), st.integers(), st.just({})
)
_ENTRY = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": _CONTENT}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["message", COMPACTION]), "role": st.just("user")},
        optional={"id": st.just("msg_1")},
    ),
    st.integers(),  # not an entry at all: read one by one
)


@given(st.lists(_ENTRY, max_size=12), st.booleans())
def test_native_base_agrees_with_the_one_by_one_scan(entries: list[Any], recorded: bool) -> None:
    given_entries = [record(e) for e in entries] if recorded else entries
    assert native_base(given_entries, {}) == _slow(given_entries)


def test_a_compaction_block_anywhere_is_found() -> None:
    block = {"role": "assistant", "content": [{"type": "text"}, {"type": COMPACTION}]}
    entries = [record({"role": "user", "content": "hi"}) for _ in range(50)]
    for at in (0, 17, 49):
        changed = [*entries[:at], record(block), *entries[at + 1 :]]
        assert not _compacted._none_held(changed)
        assert native_base(changed, {}) == at
    assert _compacted._none_held(entries) and native_base(entries, {}) == 0
    item = record({"type": COMPACTION})
    assert native_base([*entries, item], {}) == 50
    assert native_base([*entries, item], {"previous_response_id": "r"}) == 0
