"""The least a resume can cost under the library's contract (issue 27, item 1).

Run:  python benchmarks/resume_floor.py [--messages 1000] [--repeat 15]

A resume ends with a payload whose messages are Python objects the SDK serializes, and
those already sent are read-only records (`ReadOnlyPayloadError` on an edit: the session
replays them in every later request). So whatever the snapshot's form, a resume decodes
at least the sent messages from stored text, makes them records, and compiles the new
turn. This script times those three alone, on benchmarks/resume.py's histories (same
targets and shapes), with nothing else a restore does (no history, no ledger, no
integrity check, no tools), CPU time, best of ``--repeat`` with a ``gc.collect()``
before each, against ``json.dumps`` of the whole payload in the same run:

* ``loads``: ``json.loads`` of the payload's messages as text (C builds every object);
  ``orjson``: ``orjson.loads`` of it (the fastjson extra), where installed;
* ``record``: `contextchef._records.record` of the decoded messages (the library's
  read-only copy: one C copy per container and a Python pass over its values);
* ``hooked``: ``json.loads`` with ``object_hook=RecordDict`` (the decoder makes each
  object a record in C) plus a Python pass that makes each array a `RecordList` (no
  decoder hook exists for arrays): the cheapest way to records from text found;
* ``digest``: SHA-256 of the decoded messages' canonical bytes (`canonical_utf8`, by
  orjson where installed): what checking them against stored digests costs at least
  (a restore refuses an edited snapshot, naming the message);
* ``steady``: appending the model's turn and a tool result, then compiling (the compile
  a resume ends with, with the conversation already recorded);
* floor = min(loads + record, hooked) + steady (json only), and with orjson + record;
  "with the check": the orjson floor plus ``digest``.

What a restore adds above the floor is the rest of the snapshot (the history, ledger
digests, tools), its integrity checks and the history's own objects: resume.py times
the whole.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import resume  # benchmarks/resume.py: the same histories and sessions
from cold_floor import best  # best CPU ms of a run, gc.collect() before each

from contextchef._json import canonical_utf8
from contextchef._records import RecordDict, RecordList, plain, record


def arrays_as_records(value: Any) -> Any:
    """`value` (objects already `RecordDict`) with each array made a `RecordList`, in place."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                made = arrays_as_records(item)
                if made is not item:
                    dict.__setitem__(value, key, made)
        return value
    if isinstance(value, list):
        return RecordList([arrays_as_records(item) for item in value])
    return value


def messages_key(payload: dict[str, Any]) -> str:
    return next(k for k in ("messages", "input", "contents") if k in payload)


def measure(target: str, size: int, real: bool, repeat: int) -> dict[str, float]:
    chef = resume.new_session()
    chef.set_history(resume.history(size, target, real))
    payload = resume.compile_for(chef, target).payload
    mutable = plain(payload)
    text = json.dumps(mutable[messages_key(mutable)])
    decoded = json.loads(text)
    recorded = record(decoded)
    counter = iter(range(200_000, 300_000))

    def steady() -> None:
        chef.append(*resume.turn(next(counter), target, real))
        resume.compile_for(chef, target)

    out = {
        "dumps": best(lambda: json.dumps(mutable), repeat),
        "loads": best(lambda: json.loads(text), repeat),
        "record": best(lambda: record(decoded), repeat),
        "hooked": best(lambda: arrays_as_records(json.loads(text, object_hook=RecordDict)), repeat),
        "digest": best(lambda: hashlib.sha256(canonical_utf8(recorded)).digest(), repeat),
        "steady": best(steady, repeat),
    }
    assert plain(arrays_as_records(json.loads(text, object_hook=RecordDict))) == decoded
    try:
        import orjson
    except ImportError:
        out["orjson"] = float("nan")
    else:
        out["orjson"] = best(lambda: orjson.loads(text), repeat)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--targets", default=",".join(resume.TARGETS))
    args = parser.parse_args()
    logging.getLogger("contextchef").setLevel(logging.ERROR)  # histories built by hand
    print(
        f"Machine: {platform.platform()}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores. Load before: {os.getloadavg()[0]:.1f}. Command: "
        f"`python benchmarks/resume_floor.py --messages {args.messages} "
        f"--repeat {args.repeat}`.\n"
    )
    print("ms (x `json.dumps` of the payload):\n")
    print(
        "| target | shape | json.dumps | loads | orjson | record | hooked | steady | "
        "digest | floor, json | floor, orjson | with the check |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for real in (False, True):
        for target in args.targets.split(","):
            m = measure(target, args.messages, real, args.repeat)
            d = m["dumps"]
            floor_json = min(m["loads"] + m["record"], m["hooked"]) + m["steady"]
            floor_fast = m["orjson"] + m["record"] + m["steady"]
            cells = [
                f"{m[k]:.2f} ({m[k] / d:.2f}x)"
                for k in ("loads", "orjson", "record", "hooked", "steady", "digest")
            ]
            print(
                f"| {target} | {'real' if real else 'short'} | {d:.2f} | "
                + " | ".join(cells)
                + f" | {floor_json / d:.2f}x | {floor_fast / d:.2f}x | "
                f"{(floor_fast + m['digest']) / d:.2f}x |"
            )
    print(f"\nLoad after: {os.getloadavg()[0]:.1f}.")


if __name__ == "__main__":
    main()
