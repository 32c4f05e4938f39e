"""A documented, dependency-free token estimate for sizing reports.

Exact counts need each provider's tokenizer (Anthropic's is not public; OpenAI's needs
vocabulary files downloaded at run time), so reports use this estimate and label it
``*_tokens_est``: one token per 4 characters of non-CJK text, plus one token per CJK
character (Chinese/Japanese/Korean ideographs and kana/hangul take about one token each in
current BPE vocabularies), rounded up. Expect roughly ±15% on English JSON and prose.
"""

from __future__ import annotations

import math
import re

from contextchef._errors import UsageError

__all__ = ["estimate_tokens"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    """Estimated tokens in `text` (see the module docstring for the rule).

    Raises:
        UsageError: `text` is not a string.
    """
    if not isinstance(text, str):
        raise UsageError(f"estimate_tokens takes text (str), got {type(text).__name__}")
    cjk = len(_CJK.findall(text))
    return math.ceil((len(text) - cjk) / 4 + cjk)
