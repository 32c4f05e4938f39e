"""Tool-call names every provider takes back, and the one rule for those that are not.

A model's call is replayed with every later request, to the provider that made it and to
any other a session switches to; its name must then be a legal function name on each:

* OpenAI Chat Completions refuses ``messages[].tool_calls[].function.name`` outside
  ``^[a-zA-Z0-9_-]+$`` (``400 Invalid 'messages[9].tool_calls[0].function.name': string
  does not match pattern``, mcp-use/mcp-use#90); function names are at most 64 characters
  (openai SDK ``shared_params/function_definition.py``, ``name``), Responses the same
  (``Invalid 'tools[0].name': string does not match pattern``, openai/openai-dotnet#441):
  `OPENAI_NAME`;
* Anthropic validates ``tool_use.name`` as ``^[a-zA-Z0-9_-]{1,128}$`` (tool definitions
  ``{1,64}``: https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools):
  `ANTHROPIC_CALL_NAME`;
* Gemini: a call names a declared function, whose name "Must start with a letter or an
  underscore. Must be a-z, A-Z, 0-9, or contain underscores (_), dots (.), colons (:), or
  dashes (-), with a maximum length of 64" (the API's 400 for
  ``function_declarations[].name``: google-gemini/gemini-cli#9535, kaitranntt/ccs#219;
  generativelanguage v1beta ``FunctionDeclaration.name`` says the same). The google-genai
  SDK's ``FunctionDeclaration.name`` docstring (3.6.1) gives 128, the Vertex AI limit
  (aiplatform v1); v1beta ``FunctionCall.name`` leaves out dots and colons. The 400 is
  what the Gemini API enforces: `GEMINI_NAME`. The Interactions API states no rule of
  its own (../shared/research/gemini-interactions.md) and is held to the same.

The strictest common rule is the one tool wire names already follow
(`contextchef.tools._names.WIRE_NAME_RE`, ``^[A-Za-z_][A-Za-z0-9_-]{0,63}$``): a call
name outside it (``functions.grep``, ``grep<|channel|>commentary``, ``a.b``, ``名前``,
65 characters, ``""``) is recorded under `MALFORMED_CALL`, the name no tool has, the way
an empty name always was, with the name as the model wrote it (capped by `echo`) under
`WRITTEN` in the call's ``provider_data``, so the gate's answer quotes it and the model
can correct itself. Its arguments and id are kept. This is decided once, where the call
comes in (a reply read by ``ingest``, a history parsed by ``from_*``), and again by
``normalize`` for a history a host built or stored itself, before it is first sent:
what was sent is never renamed afterwards.
"""

from __future__ import annotations

import re
from dataclasses import replace

from contextchef._cache import lru_cache
from contextchef._echo import echo
from contextchef.history._messages import ToolCall
from contextchef.tools._names import is_wire_legal

__all__ = [
    "ANTHROPIC_CALL_NAME",
    "GEMINI_NAME",
    "MALFORMED_CALL",
    "OPENAI_NAME",
    "PROVIDER_NAMES",
    "WRITTEN",
    "legal_call",
    "legal_name",
    "names",
    "written_name",
]

OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""A function name on Chat Completions and Responses (whole-string match)."""
ANTHROPIC_CALL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
"""A ``tool_use`` name in an Anthropic history (whole-string match)."""
GEMINI_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")
"""A function name on Gemini, generateContent and Interactions (whole-string match)."""
PROVIDER_NAMES = (OPENAI_NAME, ANTHROPIC_CALL_NAME, GEMINI_NAME)
"""Each provider's call-name rule (the module docstring); the fakes check them
(`contextchef.testing._name_rules`), and `legal_name` is all of them at once."""

MALFORMED_CALL = "malformed_tool_call"
"""The name a model's call is recorded under when it names no tool, names one no provider
takes back (`legal_call`), or is no function call (the parsers in ``providers/``); no tool
has it, and the gate answers it as unknown."""

WRITTEN = "written_name"
"""The ``provider_data`` key of a `MALFORMED_CALL` holding the name the model wrote, capped
by `echo` (at most 120 characters and a length note)."""


@lru_cache(maxsize=4096)  # a session's calls name a few tools, again and again
def legal_name(name: str) -> bool:
    """Whether every provider takes `name` back as a call's name (see the module docstring).

    That is every one of `PROVIDER_NAMES`, which together are `WIRE_NAME_RE` (tested).
    """
    return is_wire_legal(name)


def legal_call(call: ToolCall) -> ToolCall:
    """`call` itself when its name is legal everywhere, else recorded under `MALFORMED_CALL`.

    The renamed call keeps its id, arguments and ``provider_data``, plus `WRITTEN`: the
    name as written, capped. Deterministic: the same call gives the same result.
    """
    if call.name == MALFORMED_CALL or legal_name(call.name):
        return call
    data = {**(call.provider_data or {}), WRITTEN: echo(call.name)}
    return replace(call, name=MALFORMED_CALL, provider_data=data)


def written_name(call: ToolCall) -> str | None:
    """The name the model wrote for a `MALFORMED_CALL` renamed by `legal_call`, else None."""
    said = (call.provider_data or {}).get(WRITTEN) if call.name == MALFORMED_CALL else None
    return said if isinstance(said, str) else None


def names(call: ToolCall, name: str) -> bool:
    """Whether `call` is a call of `name`: its own name, or the one `legal_call` replaced.

    For results matched to calls by name (Gemini responses without ids).
    """
    return call.name == name or written_name(call) == echo(name)
