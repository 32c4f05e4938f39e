"""The HTTP headers of a request (`CompiledRequest.headers`): betas and the host's own.

On a wire whose requests carry a beta header (`Profile.beta_header`: Anthropic's
``anthropic-beta``), the README's call is ``client.messages.create(**request.payload,
extra_headers=request.headers)``. Two ``extra`` fields would collide with it there, so
they go into the headers instead of the payload (`HEADER_FIELDS`, `body_extra`):

* ``extra_headers`` (an SDK call option): left in the payload, the call got
  ``extra_headers`` twice, a ``TypeError`` ("got multiple values for keyword argument");
  merged by hand, the host's ``anthropic-beta`` replaced the library's. Its headers join
  the request's (names compared case-insensitively); its beta header is merged value by
  value.
* ``betas`` (a field of ``client.beta.messages.create``, which the SDK sends as the
  ``anthropic-beta`` header): a caller-set ``anthropic-beta`` replaces the one ``create``
  builds from ``betas`` (the SDK's own ``lib/threads/_thread_state.py`` says so), so the
  library's header dropped the host's betas; and ``messages.create`` refuses ``betas``.
  Its values join the request's.

The beta header's value is every beta once, sorted, comma-joined (the docs' "comma-separated
list" of values, https://platform.claude.com/docs/en/api/beta-headers): compile's
``betas=``, ``extra``'s ``betas`` and an ``anthropic-beta`` in ``extra_headers``, those
the request's fields need (`Profile.field_betas`,
`field_betas`), its content's (`Profile.payload_betas`: the Files API's) and the session's
(a history carrying tool changes). A field's beta is not
added when a value of the same feature (its name less the date: ``mcp-client-``) is
already given, so a host that pins another version keeps it. Other wires keep both
fields where they were: there the payload is the whole call
(``client.chat.completions.create(**payload)``), and ``extra_headers`` rides in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from contextchef._errors import UsageError, shown
from contextchef.providers._base import Profile

__all__ = ["HEADER_FIELDS", "body_extra", "field_betas", "request_headers"]

HEADER_FIELDS = ("betas", "extra_headers")
"""``extra`` fields sent as headers on a wire with a beta header (module doc)."""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}$")


def body_extra(extra: Mapping[str, Any], profile: Profile) -> Mapping[str, Any]:
    """`extra` less `HEADER_FIELDS` where `profile` has a beta header (they go in headers)."""
    if profile.beta_header is None or not any(k in extra for k in HEADER_FIELDS):
        return extra
    return {k: v for k, v in extra.items() if k not in HEADER_FIELDS}


def field_betas(profile: Profile, extra: Mapping[str, Any], given: Iterable[str]) -> set[str]:
    """The betas the fields of `extra` need (`Profile.field_betas`), less a feature `given`.

    A dotted path (``thinking.block_binding``) needs its beta when it holds a value.
    """
    have = {_feature(b) for b in given}
    needed: set[str] = set()
    for path, beta in profile.field_betas.items():
        value: Any = extra
        for key in path.split("."):
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is not None and _feature(beta) not in have:
            needed.add(beta)
    return needed


def _feature(beta: str) -> str:
    """A beta's feature: its value less a trailing date (``mcp-client-2025-11-20``)."""
    return _DATE.sub("", beta)


def request_headers(
    profile: Profile,
    extra: Mapping[str, Any],
    betas: Iterable[str],
    payload: Mapping[str, Any] | None = None,
    memo: dict[Any, Any] | None = None,
) -> dict[str, str]:
    """The request's headers: `betas` (compile's and the session's), `extra`'s and its fields'.

    Args:
        profile: The target's profile.
        extra: The host's extra fields (not changed).
        betas: Beta values compile was given or the session needs.
        payload: The request, whose content may need betas (`Profile.payload_betas`).
        memo: The ledger's cache, for `Profile.payload_betas`.

    Raises:
        UsageError: Betas for a target with no beta header (`Profile.beta_header`);
            ``extra``'s ``betas`` not a list of strings, or ``extra_headers`` not a
            mapping of header names to strings (there), or naming a header twice in
            different cases.
    """
    name = profile.beta_header
    own: Mapping[str, str] = {}
    asked = set(betas)
    if name is not None:
        own = _headers(extra.get("extra_headers", {}))
        asked |= set(_strings(extra.get("betas", []), "betas"))
        given = (v for k, v in own.items() if k.lower() == name.lower())
        asked |= {b.strip() for v in given for b in v.split(",") if b.strip()}
    asked |= field_betas(profile, extra, asked)
    if profile.payload_betas is not None and payload is not None:
        asked |= set(profile.payload_betas(payload, {} if memo is None else memo))
    if asked and name is None:
        raise UsageError(
            f"betas {sorted(asked)} were given, but target {profile.target!r} has no beta header"
        )
    headers = {k: v for k, v in sorted(own.items()) if name is None or k.lower() != name.lower()}
    if asked and name is not None:
        headers[name] = ",".join(sorted(asked))
    return headers


_BETA = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 5.1: a field name
_VALUE = re.compile(r"[\t\x20-\x7e]*")  # visible ASCII, spaces and tabs: no CR, LF or NUL


def _strings(value: object, what: str) -> list[str]:
    """Beta names, each stripped (``" a-1 "`` is ``a-1``); an empty or spaced one refused."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        names = [v.strip() for v in value]
        if all(map(_BETA.fullmatch, names)):
            return names
    raise UsageError(
        f"extra field {what!r} holds {shown(value, 80)}; it takes a list of beta names "
        "(letters, digits, '-', '.' and '_', none empty), sent in the anthropic-beta header"
    )


def _headers(value: object) -> Mapping[str, str]:
    """``extra_headers``: header names (RFC 9110 tokens, each once) to ASCII values.

    A name or value an HTTP client cannot send (a non-ASCII name raised
    ``UnicodeEncodeError`` in the SDK call; CR or LF would split the header) is refused.
    """
    names = [k.lower() for k in value] if isinstance(value, Mapping) else []
    if (
        isinstance(value, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        and all(_TOKEN.fullmatch(k) and _VALUE.fullmatch(v) for k, v in value.items())
        and len(set(names)) == len(names)
    ):
        return value
    raise UsageError(
        f"extra field 'extra_headers' holds {shown(value, 80)}; it takes a mapping of header "
        "names (RFC 9110 tokens: ASCII letters, digits and !#$%&'*+.^_`|~-, each once in any "
        "case) to ASCII values without CR, LF or NUL, merged into CompiledRequest.headers"
    )
