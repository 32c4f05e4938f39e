"""Shared fixtures: the real data in ../shared (read in place, never copied)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_root() -> Path:
    """``$CONTEXTCHEF_SHARED_DATA``'s parent (the ``shared`` folder), else ../shared."""
    env = os.environ.get("CONTEXTCHEF_SHARED_DATA")
    if env:
        return Path(env).resolve().parent
    return (REPO.parent / "shared").resolve()


def shared_data() -> Path:
    env = os.environ.get("CONTEXTCHEF_SHARED_DATA")
    path = Path(env) if env else shared_root() / "data"
    if not path.is_dir():
        pytest.fail(f"shared data not found at {path}; set CONTEXTCHEF_SHARED_DATA")
    return path


def load_case(name: str) -> dict[str, Any]:
    path = shared_root() / "cases" / f"{name}.json"
    if not path.is_file():
        pytest.fail(f"case file {path} not found")
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


@pytest.fixture(scope="session")
def catalogs_dir() -> Path:
    return shared_data() / "catalogs"


@pytest.fixture(scope="session")
def catalog_paths(catalogs_dir: Path) -> list[Path]:
    paths = sorted(catalogs_dir.glob("*.json"))
    assert len(paths) >= 10
    return paths


@pytest.fixture(scope="session")
def redis_server_url() -> Iterator[str]:
    """A real Redis on 127.0.0.1 (see tests/redis_server.py); skipped only without a binary."""
    from redis_server import INSTALL_HINT, redis_url

    with redis_url() as url:
        if url is None:
            if os.environ.get("CONTEXTCHEF_REQUIRE_REDIS"):
                pytest.fail(INSTALL_HINT)
            pytest.skip(INSTALL_HINT)
        yield url
