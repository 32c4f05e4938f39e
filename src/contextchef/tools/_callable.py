"""Tools from Python functions (tools layer): schema, description and a runner.

`schema_from_callable` reads a function's signature and docstring. Annotations are
resolved where the function was written, as `typing.get_type_hints` does: in the module
of the function itself (through ``functools.partial``, bound methods and
``functools.wraps`` wrappers), so modules with ``from __future__ import annotations``
(PEP 563), string annotations and forward references to classes defined later in the
module register like any other; the names a closure captures are visible too. A name
that cannot be resolved is refused with `InvalidToolError` naming the function, the
parameter and the name.

The runner validates the arguments by name against the same pydantic model the schema
comes from and calls the function with the converted values; positional-only parameters
(``def f(n, /)``) are passed by position, in order.
"""

from __future__ import annotations

import functools
import inspect
import sys
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from contextchef._errors import (
    ContextChefError,
    InvalidToolError,
    MalformedArgumentsError,
    shown,
)
from contextchef._json import JsonValue

__all__ = ["handler_problems", "schema_from_callable"]


def _strip_titles(node: JsonValue) -> JsonValue:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "title" and isinstance(v, str):
                continue
            if k == "properties" and isinstance(v, dict):
                out[k] = {n: _strip_titles(s) for n, s in v.items()}
            else:
                out[k] = _strip_titles(v)
        return out
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def schema_from_callable(
    func: Callable[..., Any],
) -> tuple[str, str, dict[str, JsonValue], Callable[..., Any]]:
    """Derive (name, description, input_schema, runner) from a Python function.

    The schema comes from the signature's annotations and defaults (via pydantic), with
    ``additionalProperties: false`` so unexpected arguments are rejected by the gate;
    parameter descriptions and the tool description come from a Google, reST or numpy
    docstring (a description given by ``Annotated[T, Field(description=...)]`` is kept
    when the docstring has none). String annotations (``from __future__ import
    annotations``) are resolved in the function's own module, as `typing.get_type_hints`
    does. A ``functools.partial`` is named and described after the function it wraps,
    without the arguments it binds by position. The runner (sync, or async for a
    coroutine function) takes the arguments by name, converts them to the annotated types
    (enums, dates, models) and passes positional-only parameters by position.
    ``*args``/``**kwargs`` are not allowed.

    Raises:
        InvalidToolError: If the function takes ``*args``/``**kwargs``, an annotation
            names something its module does not define (the message names the parameter
            and the name) or cannot be turned into JSON Schema, or the object cannot be
            read at all.
    """
    try:
        return _from_callable(func)
    except ContextChefError:
        raise
    except Exception as exc:  # no signature, or a foreign object whose attributes raise
        raise InvalidToolError(
            f"cannot read a signature from a {type(func).__name__} ({type(exc).__name__}): "
            "register a function, a Tool or a tool dict",
            tool=f"<{type(func).__name__}>",
        ) from exc


def _home(func: Any) -> Any:
    """The function whose module (and closure) `func`'s annotations were written in."""
    for _ in range(100):  # a bounded walk: a __wrapped__ cycle is not followed forever
        if isinstance(func, functools.partial):
            func = func.func
        elif inspect.ismethod(func):
            func = func.__func__
        elif hasattr(func, "__wrapped__"):
            func = func.__wrapped__
        else:
            break
    return func


def _namespaces(home: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(globals, locals) for evaluating `home`'s annotations: its module, its closure."""
    globalns = getattr(home, "__globals__", None)
    if not isinstance(globalns, dict):
        module = sys.modules.get(getattr(home, "__module__", None) or "")
        globalns = dict(vars(module)) if module is not None else {}
    localns: dict[str, Any] = {}
    code, cells = getattr(home, "__code__", None), getattr(home, "__closure__", None) or ()
    for var, cell in zip(getattr(code, "co_freevars", ()), cells, strict=False):
        try:
            localns[var] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    return globalns, localns


def _resolved(
    name: str,
    pname: str,
    annotation: Any,
    namespaces: tuple[dict[str, Any], dict[str, Any]],
    module: str,
) -> Any:
    """`annotation` with its string parts evaluated, as `typing.get_type_hints` does.

    Raises:
        InvalidToolError: If a name in it is not defined, or it is not a valid expression.
    """

    def probe() -> None: ...

    probe.__annotations__ = {"p": annotation}
    try:
        return typing.get_type_hints(probe, *namespaces, include_extras=True)["p"]
    except NameError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        why = f"the name {shown(missing)} is not defined there; import or define it at module level"
    except Exception as exc:  # a string that is no expression, or an invalid type form
        why = f"{type(exc).__name__}: {shown(str(exc), 200)}"
    raise InvalidToolError(
        f"tool {shown(name)}: parameter {shown(pname)}: cannot resolve its annotation "
        f"{shown(str(annotation), 200)} in module {shown(module)}: {why}",
        tool=name,
    )


def _from_callable(
    func: Callable[..., Any],
) -> tuple[str, str, dict[str, JsonValue], Callable[..., Any]]:
    import docstring_parser  # local: only needed for callables
    import pydantic

    home = _home(func)
    named: Any = func
    while isinstance(named, functools.partial):
        named = named.func
    name = getattr(named, "__name__", "")
    doc = docstring_parser.parse(inspect.getdoc(named) or "")
    param_docs = {p.arg_name: (p.description or "") for p in doc.params}
    description = "\n\n".join(x for x in (doc.short_description, doc.long_description) if x)
    namespaces = _namespaces(home)
    module = str(getattr(home, "__module__", None) or "?")
    fields: dict[str, Any] = {}
    signature = inspect.signature(func)  # raising: see schema_from_callable
    for pname, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise InvalidToolError(
                f"tool {shown(name)}: *args/**kwargs cannot be described as tool parameters; "
                "declare each parameter explicitly",
                tool=name,
            )
        annotation = Any
        if param.annotation is not inspect.Parameter.empty:
            annotation = _resolved(name, pname, param.annotation, namespaces, module)
        default = ... if param.default is inspect.Parameter.empty else param.default
        text = " ".join(param_docs.get(pname, "").split())
        field = pydantic.Field(default, description=text) if text else pydantic.Field(default)
        fields[pname] = (annotation, field)
    try:
        model = pydantic.create_model(
            f"{name}_args", __config__=pydantic.ConfigDict(extra="forbid"), **fields
        )
        raw = model.model_json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
        raise InvalidToolError(
            f"tool {shown(name)}: cannot derive a JSON Schema from its signature: {exc}", tool=name
        ) from exc
    schema = _strip_titles(raw)
    assert isinstance(schema, dict)
    return name, description, schema, _runner(func, signature, model)


def _runner(
    func: Callable[..., Any], signature: inspect.Signature, model: Any
) -> Callable[..., Any]:
    """`func` called by name: arguments checked and converted by `model`, then passed.

    The check refuses arguments the parameter types cannot take although the JSON Schema
    allows them. JSON Schema counts ``1e20`` as an integer, a Python ``int`` parameter
    refuses it as too large (pydantic ``int_parsing_size``); such arguments raise
    `MalformedArgumentsError` naming the parameter, which the gate's caller answers as
    invalid arguments rather than as the tool's own failure. What the function body
    raises is not touched.

    Positional-only parameters go by position, in signature order, up to the last one
    given; one left out before it takes its default. The others go by name, only those
    given (the function's own defaults apply to the rest).
    """
    import pydantic

    positional = [
        p for p in signature.parameters.values() if p.kind is inspect.Parameter.POSITIONAL_ONLY
    ]

    def arguments(kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        try:
            checked = model.model_validate(kwargs)
        except pydantic.ValidationError as exc:
            why = "; ".join(_problems(exc))
            raise MalformedArgumentsError(why, raw=shown(kwargs, 200)) from None
        values = {k: v for k, v in checked if k in checked.model_fields_set}
        given = [i for i, p in enumerate(positional) if p.name in values]
        head = positional[: given[-1] + 1] if given else []
        args = [values.pop(p.name) if p.name in values else p.default for p in head]
        return args, values

    if inspect.iscoroutinefunction(func):  # through partials and bound methods too

        @functools.wraps(func)
        async def run_async(**kwargs: Any) -> Any:
            args, named = arguments(kwargs)
            return await func(*args, **named)

        _MODELS[run_async] = model
        return run_async

    @functools.wraps(func)
    def run(**kwargs: Any) -> Any:
        args, named = arguments(kwargs)
        return func(*args, **named)

    _MODELS[run] = model
    return run


_MODELS: weakref.WeakKeyDictionary[Callable[..., Any], Any] = weakref.WeakKeyDictionary()
"""The pydantic model each runner `schema_from_callable` made checks its arguments with."""


def _problems(exc: Any) -> list[str]:
    """One ``<parameter>: <why>`` line per error of a pydantic ``ValidationError``."""
    return [
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
        for e in exc.errors(include_url=False)
    ]


def handler_problems(handler: object, arguments: Mapping[str, Any]) -> list[str]:
    """What a function tool's parameter types refuse in `arguments` (``[]``: nothing).

    The gate asks it after the JSON Schema check, so that it never allows a call the
    handler then refuses: the schema cannot say everything the types do (JSON Schema
    counts ``1e20`` as an integer, pydantic refuses it for an ``int``; a ``date``'s
    format, a validator). `handler` is what the registry holds for the tool; only a
    runner `schema_from_callable` made has parameter types (a host's own handler of a
    tool dict takes what its schema says), so any other gives ``[]``.

    Returns:
        One ``<parameter>: <why>`` line per problem, in pydantic's words.
    """
    try:
        model = _MODELS.get(handler)  # type: ignore[call-overload]
    except TypeError:  # a handler that takes no weak reference (a builtin) or no hash
        return []
    if model is None:
        return []
    import pydantic

    try:
        model.model_validate(dict(arguments))
    except pydantic.ValidationError as exc:
        return _problems(exc)
    return []
