"""A real ``redis-server`` on 127.0.0.1 for the Redis session-store tests.

``$CONTEXTCHEF_REDIS_URL`` (set by .ci/run, which starts the server) wins; otherwise a
``redis-server`` binary on PATH (or in /usr/bin, /usr/sbin, /usr/local/bin) is started
on a free port for the test session, without persistence. With no binary the tests are
skipped with the reason, unless ``$CONTEXTCHEF_REQUIRE_REDIS`` is set (CI), where that
is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["INSTALL_HINT", "find_redis_server", "redis_url"]

INSTALL_HINT = (
    "no redis-server binary found: install it (Debian/Ubuntu: apt-get install -y "
    "redis-server) or set CONTEXTCHEF_REDIS_URL; .ci/run installs and starts one"
)


def find_redis_server() -> str | None:
    found = shutil.which("redis-server")
    if found:
        return found
    for folder in ("/usr/bin", "/usr/sbin", "/usr/local/bin"):
        path = os.path.join(folder, "redis-server")
        if os.access(path, os.X_OK):
            return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _ping(url: str, deadline: float) -> None:
    import redis

    client = redis.Redis.from_url(url)
    while True:
        try:
            client.ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
        finally:
            client.close()


@contextmanager
def redis_url() -> Iterator[str | None]:
    """A URL of a running Redis, or None when none can be had (see the module doc)."""
    env = os.environ.get("CONTEXTCHEF_REDIS_URL")
    if env:
        _ping(env, time.monotonic() + 10)
        yield env
        return
    binary = find_redis_server()
    if binary is None:
        yield None
        return
    port = _free_port()
    with tempfile.TemporaryDirectory() as folder:
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                folder,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"redis://127.0.0.1:{port}/0"
            _ping(url, time.monotonic() + 10)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)
