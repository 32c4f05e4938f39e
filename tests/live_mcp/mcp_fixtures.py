"""Real MCP server processes for the contextchef.mcp tests (no mocks of the SDK).

Not a conftest.py: other test folders import the root one as ``conftest``.

``fixture_server.py`` (this folder) is written with the SDK and serves stdio or
streamable HTTP on 127.0.0.1; ``mcp-server-time`` is the third-party reference server
(installed from PyPI with the test extra).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from contextchef.mcp import McpServer

SERVER = Path(__file__).with_name("fixture_server.py")


def fixture_stdio(page_size: int = 3, **options: object) -> McpServer:
    """The fixture server over stdio, `page_size` tools per ``tools/list`` page."""
    return McpServer(command=sys.executable, args=(str(SERVER), "stdio", str(page_size)), **options)  # type: ignore[arg-type]


def time_server(**options: object) -> McpServer:
    """The reference server ``mcp-server-time`` (its clock in UTC)."""
    return McpServer(
        command=sys.executable,
        args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
        **options,  # type: ignore[arg-type]
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def http_server(page_size: int = 3) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The fixture server over streamable HTTP on 127.0.0.1 (a free port): (process, URL)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port), str(page_size)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP fixture server did not start") from None
                time.sleep(0.1)
        yield proc, f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=10)
