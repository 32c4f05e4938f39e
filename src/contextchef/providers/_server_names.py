"""Names of the provider-side tools a strategy declares beside a session's own tools.

Under ``anthropic-native`` (and its ``-regex`` variant) the ``tools`` array holds
Anthropic's server tool search, ``tool_search_tool_bm25`` or ``tool_search_tool_regex``
(https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool), next to the
registered tools; a registered tool of the same name makes two entries of one name, which
the API refuses (tool names must be unique in a request). The session reserves these
names as it reserves its own tools' (`contextchef.session._toolset`), whatever the
strategy, so a tool never takes one; `providers.anthropic._render.SEARCH_TOOLS` declares
them (a test checks that they agree).
"""

from __future__ import annotations

__all__ = ["SERVER_TOOL_NAMES"]

SERVER_TOOL_NAMES = frozenset({"tool_search_tool_bm25", "tool_search_tool_regex"})
"""Anthropic's server tool-search tools' names."""
