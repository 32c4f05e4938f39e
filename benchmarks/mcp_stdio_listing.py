"""A huge ``tools/list`` over stdio: the SDK's transport against contextchef's bounded one.

Starts ``tests/live_mcp/hostile_server.py huge`` (the official SDK; one ``tools/list``
answer of ``--mb`` megabytes on one line) and has `McpHub` list it, once per transport,
each in a fresh process (peak RSS is per process):

* ``sdk``: ``mcp.client.stdio.stdio_client`` (what contextchef used before), the
  listing's size checked after the SDK parsed it;
* ``bounded``: `contextchef.mcp._stdio.bounded_stdio_client`, which drops the line once
  it passes ``max_listing_bytes`` + 64 KiB.

Reports the seconds from the request to the error (the server building its answer
included), the error, the process's peak RSS above its RSS once connected, and how long
the next call on the same connection then takes (it is answered after the rest of the
huge line has been read and dropped).

    python benchmarks/mcp_stdio_listing.py [--mb 50] [--timeout 600] [--transport sdk bounded]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from contextchef import ContextChef
from contextchef.mcp import McpServer, McpServerError, _client
from contextchef.mcp._hub import McpHub

SERVER = Path(__file__).resolve().parents[1] / "tests" / "live_mcp" / "hostile_server.py"


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run(transport: str, megabytes: float, timeout: float) -> dict[str, object]:
    if transport == "sdk":
        _client.sdk_has_helpers = lambda: False  # the SDK's own stdio_client
    spec = McpServer(
        command=sys.executable,
        args=(str(SERVER), "huge"),
        env={"HUGE_MB": str(megabytes)},
        timeout=timeout,
    )
    hub = McpHub(ContextChef())
    hub.start()
    try:
        conn = hub._connect(spec)
        base = _rss_mb()
        start = time.perf_counter()
        try:
            hub._run(conn.list_tools())
            error = "none: listed"
        except McpServerError as exc:
            error = f"{type(exc).__name__}: {str(exc)[:160]}"
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.perf_counter()  # the next answer comes after the rest of the line
        answer = hub._run(conn.call_tool("storm", {"n": 0}))
        after = time.perf_counter() - start
    finally:
        hub.close()
    return {
        "transport": transport,
        "listing_mb": megabytes,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak, 1),
        "peak_above_connected_mb": round(peak - base, 1),
        "error": error,
        "next_call_s": round(after, 2),
        "next_call_ok": not answer.get("isError", False),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--transport", nargs="+", default=["sdk", "bounded"])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run(args.one, args.mb, args.timeout)))
        return
    for transport in args.transport:  # each in its own process: ru_maxrss is per process
        cmd = [sys.executable, __file__, "--one", transport, "--mb", str(args.mb)]
        cmd += ["--timeout", str(args.timeout)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        print(out.stdout.strip() or out.stderr.strip()[-2000:], flush=True)


if __name__ == "__main__":
    main()
