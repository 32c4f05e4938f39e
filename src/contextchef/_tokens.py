"""A documented, dependency-free token estimate for sizing reports and budgets.

Exact counts need each provider's tokenizer (Anthropic's and Google's are not public;
OpenAI's needs vocabulary files downloaded at run time), so reports use this estimate
and label it ``*_tokens_est``. The rule reads each character's UTF-8 length:

* 1 byte (ASCII: English prose, JSON): a quarter token;
* 2 bytes (accented Latin, Greek, Cyrillic, Hebrew, Arabic): half a token, but a
  combining mark (U+0300-U+036F, with the 16 Greek signs up to U+037F) one token;
* 3 bytes (CJK, kana, hangul, their punctuation, symbols and arrows, dingbats, Indic
  and Thai scripts, the zero-width joiner, variation selectors): one token;
* 4 bytes (outside the Basic Multilingual Plane: emoji, the regional indicators of a
  flag, skin-tone modifiers, rare ideographs): two tokens;

summed and rounded up. Why: a byte-level BPE vocabulary merges runs of ASCII letters
into tokens of about four characters, but keeps fewer merges the longer a character's
UTF-8 form, and none across an emoji or a mark: it spends at least a token on each,
often two. Measured against ``o200k_base`` and ``cl100k_base`` over the real catalogs
(benchmarks/token_estimate.py; figures in benchmarks/RESULTS.md, "Token estimate"), the
estimate over the true count (o200k / cl100k) is 1.14 / 1.15 on English descriptions,
0.97 / 0.97 on JSON schemas, 1.45 / 0.89 on Chinese descriptions, 1.04 / 0.92 on
Chinese tools as JSON, 0.96 / 0.94 on LiveMCPBench (mixed). An emoji takes 1 token
(o200k) or 2 (cl100k) repeated, 1.9-2.5 (2.2-3.0) each in a run of different ones; a
flag 4 / 6, a ZWJ family of 7 code points 11 / 18, a letter and a combining mark 2 / 2
(1.25 here). The rule before counted every character outside CJK a quarter token:
4,000 emoji were 1,000 tokens (o200k 4,000, cl100k 8,000), now 8,000.
Known misses: a long base64 run (an image, a signature) is about 0.7 tokens a
character in both vocabularies and a quarter here (providers count images their own
way); Hindi and Thai are over-counted about 2.6x for o200k (0.8x for cl100k).
"""

from __future__ import annotations

from contextchef._errors import UsageError

__all__ = ["estimate_tokens"]


_ASCII = bytes(range(128))
_LEAD4 = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")
"""The first bytes of a 4-byte UTF-8 sequence (a character outside the BMP)."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens in `text` (see the module docstring for the rule).

    Linear in the text's length, with no Python loop or regular expression over it: one
    UTF-8 encoding, then byte counts over its non-ASCII bytes, in C (benchmarks/RESULTS.md,
    "Token estimate"); ASCII text is counted without them (len / 4).

    Raises:
        UsageError: `text` is not a string.
    """
    if not isinstance(text, str):
        raise UsageError(f"estimate_tokens takes text (str), got {type(text).__name__}")
    n = len(text)
    if text.isascii():
        return (n + 3) // 4
    data = text.encode("utf-8", "surrogatepass")
    rest = data.translate(None, _ASCII)  # the bytes of the other characters
    ascii_ = len(data) - len(rest)
    astral = sum(map(rest.count, _LEAD4))
    # the others take two or three bytes: len(data) = ascii + 2 two + 3 three + 4 astral
    three = len(data) - ascii_ - 4 * astral - 2 * (n - ascii_ - astral)
    two = n - ascii_ - astral - three
    # U+0300-U+037F lead with byte CC or CD, which no other character's UTF-8 holds
    marks = rest.count(b"\xcc") + rest.count(b"\xcd") if two else 0
    return (ascii_ + 3) // 4 + (two - marks + 1) // 2 + marks + three + 2 * astral
