"""The namespaces of spec 001's two-layer example, shared by the pruner and scenario tests."""

from __future__ import annotations

from typing import Any

NAMESPACES: list[dict[str, Any]] = [
    {
        "name": "file_ops",
        "description": "File system operations",
        "tools": [
            {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"path": {"type": "string"}},
            },
            {
                "name": "write_file",
                "description": "Write to a file",
                "parameters": {"path": {"type": "string"}, "content": {"type": "string"}},
            },
        ],
    },
    {
        "name": "terminal",
        "description": "Shell command execution",
        "tools": [
            {
                "name": "run_bash",
                "description": "Execute a command",
                "parameters": {"command": {"type": "string"}},
            }
        ],
    },
]
