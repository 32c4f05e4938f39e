"""Shared fixtures: the real data in ../shared (read in place, never copied), and the size
of the property tests.

Property-test sizes: one switch, ``CONTEXTCHEF_FULL_TESTS``
-----------------------------------------------------------
Unset (or ``0``), the Hypothesis profile ``suite`` is loaded and every property test
runs a reduced number of examples, sized so that ``pytest`` stays within about four
minutes on a quiet 2-core machine. ``CONTEXTCHEF_FULL_TESTS=1`` loads the profile
``full`` and runs every property test at its full count, the counts the suite always ran
before (for example 2,000 replies in tests/fuzz/test_model_output_fuzz.py, 1,000 sessions
in tests/session/test_append_only_fuzz.py), and the retrieval test on whole query sets;
benchmarks/RESULTS.md ("Test suite time") says how long each takes. Every test runs in
both; only the example counts differ. A test file takes its count from `examples`::

    @settings(max_examples=examples(full=2_000, default=150))

The switch is read once, when this file is imported (pytest-xdist workers inherit the
environment). Other Hypothesis settings (seed, verbosity, ``--hypothesis-show-statistics``)
work as usual.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent


FULL_TESTS = os.environ.get("CONTEXTCHEF_FULL_TESTS", "").strip() not in ("", "0")
"""True under ``CONTEXTCHEF_FULL_TESTS=1``: property tests run their full example counts."""

# Both profiles build on the profile Hypothesis chose itself (``ci``, derandomized and
# without an example database, when it detects CI; else its ``default``) and add: no
# per-example deadline (property tests build whole sessions; a busy machine made it
# flaky), no too-slow health check, and the blob that reproduces a failure. The profile's
# name says which counts `examples` gives; a test without its own count runs Hypothesis's
# 100 in both.
settings.register_profile(
    "suite",
    settings(),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("full", settings.get_profile("suite"))
settings.load_profile("full" if FULL_TESTS else "suite")

if os.environ.get("CONTEXTCHEF_NO_FASTJSON", "").strip() not in ("", "0"):
    # the whole suite without the fastjson extra (its encoder, orjson, and its decoder,
    # msgspec), as where the extra is absent
    from contextchef import _json, _json_read

    _json.FAST_JSON[:] = [None]
    _json_read.FAST_DECODE[:] = [None]


@pytest.fixture(scope="session", autouse=True)
def _no_provider_env() -> Iterator[None]:
    """No provider key or base URL from the environment reaches any test's SDK client.

    Every test talks to `contextchef.testing` fakes; a real ``ANTHROPIC_BASE_URL`` (or a
    key) in the shell would otherwise reroute or authorize the official clients.
    """
    from sdk_check import PROVIDER_ENV

    with pytest.MonkeyPatch.context() as env:
        for var in PROVIDER_ENV:
            env.delenv(var, raising=False)
        yield


def examples(*, full: int, default: int) -> int:
    """A property test's example count: `full` under ``CONTEXTCHEF_FULL_TESTS=1``, else
    `default` (sized for the default run's time budget; see the module doc)."""
    if default > full:
        raise ValueError(f"default ({default}) above full ({full})")
    return full if FULL_TESTS else default


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
