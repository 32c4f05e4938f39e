"""Deterministic rendering of tool-description templates: the pure channel.

A tool description may be a Jinja2 template, but what it renders to lands in the prompt
prefix that provider caches key on, so it must come out byte-identical in every session
and on every render. Templates therefore run through a *pure channel*:

* a sandboxed, immutable Jinja2 environment (``ImmutableSandboxedEnvironment``) with
  ``StrictUndefined``, no autoescaping and no loader, so templates cannot reach Python
  internals, mutate data, include files or silently print an empty string for a typo;
* none of Jinja's default globals (``lipsum`` is random; ``range``, ``dict``,
  ``cycler``, ``joiner`` and ``namespace`` go too), only the whitelisted helpers
  ``fragment``, ``tag``, ``raw``, ``join``, ``has`` and ``section``;
* only the variables the caller declared in ``allowed``, with JSON-like values;
* stubs named after every non-deterministic source (``time``, ``now``, ``random``,
  ``uuid``, ``env``, ``fs``, ``exec``, ``http``...) and a replacement ``random``
  filter, all of which raise `NondeterminismError` when a template touches them,
  instead of quietly rendering a placeholder.

The caller renders each description once per session and freezes the result; tool
definitions stay plain data (the template source and its variables), and nothing is
re-rendered while the session's prefix is cached.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from contextchef._cache import lru_cache
from contextchef._errors import ContextChefError, NondeterminismError, TemplateError, shown

if TYPE_CHECKING:
    import jinja2
    import jinja2.sandbox

# jinja2 is imported when the first template is rendered, so that ``import contextchef``
# does not pay for it (benchmarks/import_time.py).

__all__ = ["render_template"]

# Stub name -> advice given when a template touches it.
_RUN_TIME = "render it at run time in a tool result instead"
_VARIABLE = (
    "if the value is fixed for the whole session, read it in your own code and pass it "
    "through `variables` (declared in `allowed`); otherwise " + _RUN_TIME
)
_STUBS: dict[str, str] = {
    "time": _RUN_TIME,
    "now": _RUN_TIME,
    "today": _RUN_TIME,
    "datetime": _RUN_TIME,
    "date": _RUN_TIME,
    "random": _RUN_TIME,
    "uuid": _RUN_TIME,
    "env": _VARIABLE,
    "environ": _VARIABLE,
    "getenv": _VARIABLE,
    "fs": _VARIABLE,
    "open": _VARIABLE,
    "read_file": _VARIABLE,
    "exec": _VARIABLE,
    "shell": _VARIABLE,
    "subprocess": _VARIABLE,
    "http": _VARIABLE,
    "fetch": _VARIABLE,
    "request": _VARIABLE,
    "requests": _VARIABLE,
}

_HELPERS = frozenset({"fragment", "tag", "raw", "join", "has", "section"})
_RESERVED = _HELPERS | frozenset(_STUBS)

# Attribute names Jinja and Python probe on any object; the stubs answer them with
# AttributeError so that probing is not mistaken for a template touching the stub.
_PROBED = frozenset({"jinja_pass_arg", "unsafe_callable", "alters_data"})


class _Touched(Exception):
    """Internal signal: a template touched a non-deterministic stub.

    `render_template` turns it into `NondeterminismError` carrying the tool name, which
    the shared, cached environment does not know.
    """

    def __init__(self, source: str) -> None:
        super().__init__(f"template touched the non-deterministic stub {shown(source)}")
        self.source = source


class _Stub:
    """Stands in for a non-deterministic source; any use of it raises `_Touched`."""

    __slots__ = ("_source",)

    def __init__(self, source: str) -> None:
        self._source = source

    def _touch(self) -> NoReturn:
        raise _Touched(self._source)

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        self._touch()

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("_") or name in _PROBED:
            raise AttributeError(name)
        self._touch()

    def __getitem__(self, key: object) -> NoReturn:
        self._touch()

    def __iter__(self) -> NoReturn:
        self._touch()

    def __len__(self) -> NoReturn:
        self._touch()

    def __bool__(self) -> NoReturn:
        self._touch()

    def __str__(self) -> NoReturn:
        self._touch()

    def __repr__(self) -> str:
        return f"<non-deterministic stub {shown(self._source)}>"


def _random_filter(*args: object, **kwargs: object) -> NoReturn:
    raise _Touched("random")


def _tag(name: object, content: object) -> str:
    return f"<{name}>{content}</{name}>"


def _raw(text: object) -> str:
    return str(text)


def _join(items: Iterable[object], sep: object = ", ") -> str:
    return str(sep).join(map(str, items))


def _section(title: object, body: object) -> str:
    if body is None:
        return ""
    text = str(body)
    if not text.strip():
        return ""
    return f"## {title}\n{text}"


@functools.cache
def _environment() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    """Build the one shared environment of the pure channel."""
    import jinja2.sandbox

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.globals.clear()
    env.globals.update(tag=_tag, raw=_raw, join=_join, section=_section)
    env.globals.update({name: _Stub(name) for name in _STUBS})
    env.filters["random"] = _random_filter
    return env


@dataclass(frozen=True)
class _Compiled:
    template: jinja2.Template
    names: frozenset[str]  # free variables the template refers to
    references_templates: bool  # uses include / import / extends


@lru_cache(maxsize=256)
def _compile(source: str) -> _Compiled:
    import jinja2.meta

    env = _environment()
    tree = env.parse(source)
    return _Compiled(
        template=env.from_string(tree),
        names=frozenset(jinja2.meta.find_undeclared_variables(tree)),
        references_templates=any(True for _ in jinja2.meta.find_referenced_templates(tree)),
    )


def _names(names: Iterable[str]) -> str:
    listed = ", ".join(repr(n) for n in sorted(names))
    return listed or "(none)"


def _json_problem(value: object, seen: frozenset[int] = frozenset()) -> str | None:
    """Say why `value` is not JSON-like, or return None if it is."""
    kind = type(value)
    if value is None or kind in (str, int, bool):
        return None
    if kind is float and isinstance(value, float):
        return None if math.isfinite(value) else f"{shown(value)} is not a finite number"
    if kind in (list, tuple, dict):
        if id(value) in seen:
            return "it contains itself"
        inner = seen | {id(value)}
        if isinstance(value, dict):
            for key, item in value.items():
                if type(key) is not str:
                    return f"dict key {shown(key)} is not a str"
                problem = _json_problem(item, inner)
                if problem:
                    return f"[{shown(key)}]: {problem}"
            return None
        assert isinstance(value, (list, tuple))
        for index, item in enumerate(value):
            problem = _json_problem(item, inner)
            if problem:
                return f"[{index}]: {problem}"
        return None
    return (
        f"{kind.__name__} is not JSON-like (use str, int, float, bool, None "
        "and plain lists/dicts of those)"
    )


def _cause_of(exc: BaseException) -> BaseException:
    """Find a `_Touched` or contextchef error that Jinja may have wrapped."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, (_Touched, ContextChefError)):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return exc


def _check_variables(tool: str, variables: Mapping[str, object], allowed: frozenset[str]) -> None:
    clashes = (allowed | frozenset(variables)) & _RESERVED
    if clashes:
        raise TemplateError(
            f"tool {shown(tool)}: variable name(s) {_names(clashes)} clash with the template "
            f"helpers and non-deterministic stubs; rename them (reserved names: "
            f"{_names(_RESERVED)})",
            tool=tool,
        )
    for name, value in variables.items():
        problem = _json_problem(value)
        if problem:
            raise TemplateError(
                f"tool {shown(tool)}: template variable {shown(name)} has a value that is not "
                f"JSON-like: {problem}",
                tool=tool,
            )


def _check_names(
    tool: str,
    compiled: _Compiled,
    variables: Mapping[str, object],
    allowed: frozenset[str],
) -> None:
    if compiled.references_templates:
        raise TemplateError(
            f"tool {shown(tool)}: description templates cannot include, import or extend "
            "other templates; pass shared text through template_fragments (the "
            "`fragments` argument) and use fragment(name)",
            tool=tool,
        )
    unknown = compiled.names - allowed - _RESERVED
    if not unknown:
        return
    passed = unknown & frozenset(variables)
    hint = (
        f"; {_names(passed)} passed in template_vars (`variables`) but not declared in `allowed`"
        if passed
        else ""
    )
    raise TemplateError(
        f"tool {shown(tool)}: description template refers to undeclared variable(s) "
        f"{_names(unknown)}{hint}; declared variables: {_names(allowed)}; helpers: "
        f"{_names(_HELPERS)}",
        tool=tool,
    )


def render_template(
    source: str,
    *,
    tool: str,
    variables: Mapping[str, object] = {},
    allowed: Collection[str] | None = None,
    fragments: Mapping[str, str] = {},
) -> str:
    """Render a tool-description template through the pure channel.

    The template runs in a sandboxed Jinja2 environment without Jinja's default
    globals. It sees only the declared variables and these helpers:

    * ``fragment(name)``: the text of ``fragments[name]``;
    * ``tag(name, content)``: ``<name>content</name>``;
    * ``raw(text)``: ``text`` as a string, unchanged;
    * ``join(items, sep=", ")``: the items as strings, joined by ``sep``;
    * ``has(name)``: whether ``name`` is a declared variable that was passed;
    * ``section(title, body)``: ``## title``, a newline and ``body``; or ``""`` when
      ``body`` is None, empty or whitespace.

    Time, random, uuid, environment, filesystem, exec and network names (``now()``,
    ``time.now()``, ``env.HOME``, ``uuid.uuid4()``, the ``random`` filter...) exist
    only as stubs that raise. The same arguments always give the same string.

    Args:
        source: The template source.
        tool: The tool's name, used in error messages.
        variables: Values available to the template, JSON-like (str, int, float,
            bool, None and plain lists, tuples and dicts of those).
        allowed: The names the template may refer to; ``None`` means the keys of
            ``variables``. A passed variable that is not allowed stays invisible.
            An allowed variable that is not passed raises when the template
            evaluates it (guard it with ``has(name)``).
        fragments: Named text fragments for ``fragment(name)``, inserted verbatim.

    Returns:
        The rendered text.

    Raises:
        NondeterminismError: The template touched a non-deterministic stub or the
            ``random`` filter; ``source`` names it.
        TemplateError: The template has a syntax error, refers to an undeclared
            variable, includes another template, escapes the sandbox or fails while
            rendering; a variable name clashes with a helper or stub, or a variable
            value is not JSON-like; or ``fragment()`` names an unknown fragment.
    """
    declared = frozenset(variables) if allowed is None else frozenset(allowed)
    _check_variables(tool, variables, declared)
    for name, text in fragments.items():
        if type(text) is not str:
            raise TemplateError(
                f"tool {shown(tool)}: fragment {shown(name)} is a {type(text).__name__}, not a str",
                tool=tool,
            )

    import jinja2
    import jinja2.exceptions

    try:
        compiled = _compile(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(
            f"tool {shown(tool)}: syntax error in description template, line {exc.lineno}: "
            f"{exc.message}",
            tool=tool,
        ) from exc
    _check_names(tool, compiled, variables, declared)

    def fragment(name: str) -> str:
        try:
            return fragments[name]
        except (KeyError, TypeError):
            raise TemplateError(
                f"tool {shown(tool)}: unknown fragment {shown(name)}; available fragments: "
                f"{_names(fragments)}",
                tool=tool,
            ) from None

    def has(name: str) -> bool:
        return isinstance(name, str) and name in declared and name in variables

    context: dict[str, object] = {n: variables[n] for n in declared if n in variables}
    helpers: dict[str, Callable[..., object]] = {"fragment": fragment, "has": has}
    context.update(helpers)
    try:
        return compiled.template.render(context)
    except Exception as exc:
        cause = _cause_of(exc)
        if isinstance(cause, _Touched):
            raise NondeterminismError(
                f"tool {shown(tool)}: description template used {shown(cause.source)}, which is "
                "not deterministic; tool descriptions must render byte-identically in "
                "every session because they are part of the cached prompt prefix; "
                f"{_STUBS[cause.source]}",
                tool=tool,
                source=cause.source,
            ) from exc
        if isinstance(cause, ContextChefError):
            if cause is exc:
                raise
            raise cause from exc
        if isinstance(exc, jinja2.UndefinedError):
            missing = (compiled.names & declared) - frozenset(variables)
            hint = (
                f" (declared but not passed: {_names(missing)}; pass them or guard with has(name))"
                if missing
                else ""
            )
            message = f"undefined value: {exc.message}{hint}"
        elif isinstance(exc, jinja2.exceptions.SecurityError):
            message = f"blocked by the sandbox: {exc}"
        else:
            message = f"{type(exc).__name__}: {exc}"
        raise TemplateError(
            f"tool {shown(tool)}: description template failed to render: {message}", tool=tool
        ) from exc
