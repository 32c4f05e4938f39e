"""Ranker choice and score fusion: ``bm25`` (default), ``semantic``, ``hybrid`` and two-level.

* ``bm25`` — the lexical index alone (`ToolIndex`'s BM25); needs nothing extra.
* ``semantic`` — cosine similarity between the query's and each tool's embedding
  (all-MiniLM-L6-v2, int8 ONNX; see `contextchef.search._model`).
* ``hybrid`` — both, fused per query. ``weighted`` (the default):
  ``w * bm25 / max(bm25) + (1 - w) * minmax(cosine)`` with ``w = 0.3`` for queries of
  up to 12 distinct search tokens, rising linearly to ``0.3 + 0.2 = 0.5`` at 36 and
  beyond (`RankerConfig.long_query_boost`): long requests name more of a tool's own words,
  so BM25 deserves more trust there, and short ones are paraphrases the model reads
  better. Both chosen on the development split of the seven public retrieval sets
  (benchmarks/RESULTS.md, issues 15 and 28); ``rrf``: reciprocal rank fusion
  ``1 / (k + rank_bm25) + 1 / (k + rank_cosine)`` with ``k = 60``.

* ``two-level`` / ``hybrid-two-level`` — ``bm25`` / ``hybrid`` plus a second level that
  ranks the tool *groups* (MCP servers: name, description or ``instructions``, and the
  text of all their tools) with BM25 and lets a strong group lift its tools
  (`lift`): ``(1 - g) * tool + g * group / max(group)`` per query, ``g`` =
  `RankerConfig.group_weight` (`GROUP_WEIGHTS`: 0.3 over BM25, 0.1 over hybrid), chosen on
  the dev split (benchmarks/RESULTS.md).
  Tools without a group, and every tool of a catalog with fewer than two groups, keep
  their one-level score.

The model covers Latin-script text only, so a query with CJK, Hangul or kana characters,
or whose letters are mostly in another script, is answered by BM25 alone (fusing the
English model into Chinese queries costs ACEBench-zh 30 points of recall@5). So does
every query while the tool vectors are still being built. The exception: with the
``crosslingual`` extra, a Chinese query against a mostly English catalog is read through
its CC-CEDICT glosses (`contextchef.search._bilingual`), and the model embeds those.
Scores of several queries are added after each is normalized to [0, 1] (BM25 by its best
score), so a Chinese and an English query weigh the same.

A semantic-only match needs a cosine of at least `RankerConfig.min_similarity`: a query
that matches nothing, lexically or in meaning, still gets no hit (``tool_search``'s
"try other keywords" answer) instead of the least unrelated tools.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from contextchef._errors import UsageError, check_int, check_number, shown
from contextchef.search._cjk import CJK
from contextchef.tools._tool import Tool

if TYPE_CHECKING:
    import numpy as np

    from contextchef.search._model import Encoder
    from contextchef.search._vectors import VectorStore

# the model and vector modules load with the first semantic ranker, not at import (issue 27)

__all__ = [
    "RANKER_NAMES",
    "RankerConfig",
    "SemanticPart",
    "covered",
    "embedding_text",
    "fuse",
    "lift",
    "normalized",
]

RankerName = Literal["bm25", "semantic", "hybrid"]
RANKER_NAMES: tuple[str, ...] = ("bm25", "semantic", "hybrid")
GROUP_WEIGHTS = {"two-level": 0.3, "hybrid-two-level": 0.1}
"""The group share of each two-level ranker name (see `lift`), chosen on the dev split."""
_PRESETS = ("hybrid-rrf", "two-level", "hybrid-two-level")

LONG_QUERY_TOKENS = (12, 36)
"""Distinct search tokens at which `RankerConfig.long_query_boost` starts and is whole."""

_NAME_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])|[A-Z]+")


@dataclass(frozen=True, kw_only=True)
class RankerConfig:
    """How ``tool_search`` queries are ranked (the exact-name path never changes).

    Attributes:
        kind: ``bm25`` (default), ``semantic`` or ``hybrid``.
        fusion: ``weighted`` (default) or ``rrf``; used by ``hybrid``.
        bm25_weight: The BM25 share of the weighted fusion, in [0, 1].
        long_query_boost: Added to `bm25_weight` for long queries, in [0, 1]: none up
            to 12 distinct search tokens (`contextchef.search._index.tokenize`), all of
            it from 36, linear between (`LONG_QUERY_TOKENS`); the sum is capped at 1.
            0 gives every query `bm25_weight`.
        open_request_weight: For a query that is a conversation transcript (``user:`` /
            ``system:`` turns with ``[tool(...)]`` calls), the share, in [0, 10],
            of its user turns after the last tool call, scored again as a second
            query and added (`contextchef.search._transcript`); every ranker, ``bm25``
            included. 0 ranks the transcript as one text. The default 0.75 was chosen
            on the dev split (benchmarks/RESULTS.md, issue 28, fourth pass).
        rrf_k: The RRF constant (> 0).
        min_similarity: Least cosine for a tool that no query word matches to be
            returned, in [-1, 1].
        group_weight: The group share of two-level ranking, in [0, 1] (0: tools only;
            the ``two-level`` names use `GROUP_WEIGHTS`). Groups are the tools' servers.
        crosslingual: Answer Chinese queries against an English catalog through the
            CC-CEDICT dictionary (`contextchef.search._bilingual`): None (default) when
            the ``crosslingual`` extra is installed, True always (requires it), False
            never. A Chinese catalog's queries never take this route.
        crosslingual_weight: The BM25 share of the weighted fusion, in [0, 1], for a
            query read through its dictionary glosses (in place of `bm25_weight` and
            `long_query_boost`): the model reads a list of glosses, not a sentence.
        model_path: Your own ONNX export instead of the packaged model.
        model_sha256: Its expected sha256 (hex); checked before loading when given.
        tokenizer_path: Its ``tokenizer.json`` or ``vocab.txt`` (None: the bundled
            MiniLM vocabulary).
        cache_dir: Root of the embedding cache (None: `default_cache_dir`).
        disk_cache: Keep tool vectors on disk between processes.
        background: Embed tools in a background thread on the first search, BM25
            answering until they are ready (False: embed in the first search's thread).
        threads: onnxruntime intra-op threads (0: its default, one per core).

    Raises:
        UsageError: A field is out of range.
        MissingExtraError: A semantic ranker without the ``semantic`` extra installed,
            or ``crosslingual=True`` without the ``crosslingual`` extra.
    """

    kind: RankerName = "bm25"
    fusion: Literal["weighted", "rrf"] = "weighted"
    bm25_weight: float = 0.3
    long_query_boost: float = 0.2
    open_request_weight: float = 0.75
    rrf_k: int = 60
    min_similarity: float = 0.2
    group_weight: float = 0.0
    crosslingual: bool | None = None
    crosslingual_weight: float = 0.6
    model_path: str | Path | None = None
    model_sha256: str | None = None
    tokenizer_path: str | Path | None = None
    cache_dir: str | Path | None = None
    disk_cache: bool = True
    background: bool = True
    threads: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in RANKER_NAMES:
            raise UsageError(f"unknown ranker {shown(self.kind)}; valid: {', '.join(RANKER_NAMES)}")
        if not isinstance(self.fusion, str) or self.fusion not in ("weighted", "rrf"):
            raise UsageError(f"unknown fusion {shown(self.fusion)}; valid: weighted, rrf")
        check_number("bm25_weight", self.bm25_weight, minimum=0.0, maximum=1.0)
        check_number("long_query_boost", self.long_query_boost, minimum=0.0, maximum=1.0)
        check_number("open_request_weight", self.open_request_weight, minimum=0.0, maximum=10.0)
        check_int("rrf_k", self.rrf_k, minimum=1)
        check_number("min_similarity", self.min_similarity, minimum=-1.0, maximum=1.0)
        check_number("group_weight", self.group_weight, minimum=0.0, maximum=1.0)
        check_number("crosslingual_weight", self.crosslingual_weight, minimum=0.0, maximum=1.0)
        check_int("threads", self.threads, maximum=4096)
        if self.crosslingual is not None and not isinstance(self.crosslingual, bool):
            raise UsageError(
                f"crosslingual must be None, True or False, got {shown(self.crosslingual)}"
            )
        if self.crosslingual:
            from contextchef.search._bilingual import require_extra as require_dictionary

            require_dictionary()
        if self.kind != "bm25":
            from contextchef.search._model import require_extra

            require_extra(need_model_package=self.model_path is None)

    def weight_for(self, query_tokens: int) -> float:
        """The BM25 share of the weighted fusion for a query of `query_tokens` distinct tokens."""
        start, full = LONG_QUERY_TOKENS
        ramp = min(max((query_tokens - start) / (full - start), 0.0), 1.0)
        return min(1.0, self.bm25_weight + self.long_query_boost * ramp)

    @classmethod
    def of(cls, value: RankerConfig | str) -> RankerConfig:
        """A config from itself or a ranker name (``"hybrid"``, ``"two-level"``, ...).

        Names: ``bm25``, ``semantic``, ``hybrid``, ``hybrid-rrf``, ``two-level``,
        ``hybrid-two-level``.

        Raises:
            UsageError: An unknown name.
            MissingExtraError: See the class.
        """
        if isinstance(value, RankerConfig):
            return value
        if not isinstance(value, str):
            raise UsageError(f"ranker must be a name or a RankerConfig, got {type(value).__name__}")
        if value == "hybrid-rrf":
            return cls(kind="hybrid", fusion="rrf")
        if value == "two-level":
            return cls(kind="bm25", group_weight=GROUP_WEIGHTS[value])
        if value == "hybrid-two-level":
            return cls(kind="hybrid", group_weight=GROUP_WEIGHTS[value])
        if value not in RANKER_NAMES:
            valid = ", ".join([*RANKER_NAMES, *_PRESETS])
            raise UsageError(f"unknown ranker {value!r}; valid: {valid}")
        return cls(kind=value)  # type: ignore[arg-type]


def covered(query: str) -> bool:
    """Whether the English model can read `query`.

    False when it holds a CJK, Hangul or kana character, or when fewer than 80% of its
    letters are Latin (ASCII or accented Latin). A query without letters is covered.
    """
    if query.isascii():
        return True
    if CJK.search(query):
        return False
    letters = [ch for ch in query if ch.isalpha()]
    latin = sum(1 for ch in letters if ch.isascii() or "LATIN" in unicodedata.name(ch, ""))
    return not letters or latin >= 0.8 * len(letters)


def embedding_text(tool: Tool) -> str:
    """The text a tool is embedded from: its name split into words, then its description.

    ``create_issue`` / ``createIssue`` -> ``create issue: <description>``.
    """
    words = " ".join(p.lower() for p in _NAME_PART.findall(tool.name)) or tool.name
    return f"{words}: {tool.description}" if tool.description else words


class SemanticPart:
    """The embedding side of one index: its texts' hashes, the shared store, fusion.

    Args:
        config: A ``semantic`` or ``hybrid`` config.
        texts: One `embedding_text` per index entry, in index order.

    Raises:
        MissingExtraError: The ``semantic`` extra is not installed.
        EmbeddingModelError: The model file is missing or not the expected one.
    """

    def __init__(self, config: RankerConfig, texts: Sequence[str]) -> None:
        from contextchef.search._model import encoder_for
        from contextchef.search._vectors import default_cache_dir, store_for, text_hash

        self.config = config
        self.encoder: Encoder = encoder_for(
            config.model_path,
            model_sha256=config.model_sha256,
            tokenizer_path=config.tokenizer_path,
            threads=config.threads,
        )
        cache = None
        if config.disk_cache:
            cache = Path(config.cache_dir) if config.cache_dir else default_cache_dir()
        self.store: VectorStore = store_for(self.encoder, cache)
        self.texts = tuple(texts)
        self.hashes = tuple(text_hash(t) for t in self.texts)
        self._requested = False
        self._matrix: np.ndarray | None = None

    def extended(self, texts: Sequence[str]) -> SemanticPart:
        """This part plus `texts`, embedded now (a runtime tool is searchable at once)."""
        from contextchef.search._vectors import text_hash

        new = copy.copy(self)
        hashes = tuple(text_hash(t) for t in texts)
        self.store.embed_now(hashes, texts)
        new.texts = self.texts + tuple(texts)
        new.hashes = self.hashes + hashes
        new._matrix = None
        return new

    def start(self) -> None:
        """Start building the vectors (in the background unless configured otherwise)."""
        if not self._requested:
            self._requested = True
            self.store.request(self.hashes, self.texts, background=self.config.background)

    def matrix(self) -> np.ndarray | None:
        """The (n, dim) tool vectors, or None while they are being built."""
        if self._matrix is None:
            self.start()
            self._matrix = self.store.matrix(self.hashes)
        return self._matrix

    def wait(self, timeout: float | None = None) -> bool:
        """Start the build if needed and block until it ends; True when vectors are ready."""
        self.start()
        return self.store.wait(self.hashes, timeout)

    def scores(
        self, query: str, bm25: np.ndarray, *, tokens: int = 0, translated: bool = False
    ) -> np.ndarray | None:
        """Fused scores of every entry for one query, or None when BM25 must answer alone.

        Args:
            query: The query text.
            bm25: Its BM25 scores, one per entry.
            tokens: Its number of distinct search tokens (see `fuse`).
            translated: `query` is a Chinese query's glosses (see `fuse`).

        Returns:
            Scores in [0, 1] (``weighted`` and ``semantic``) or RRF sums; 0 means no hit.
        """
        if not covered(query):
            return None
        matrix = self.matrix()
        if matrix is None or len(matrix) != len(bm25):
            return None
        cosine = matrix @ self.encoder.encode_query(query)
        return fuse(self.config, scores=bm25, cosine=cosine, tokens=tokens, translated=translated)


def fuse(
    config: RankerConfig,
    *,
    scores: np.ndarray,
    cosine: np.ndarray,
    tokens: int = 0,
    translated: bool = False,
) -> np.ndarray:
    """One query's final scores from its BM25 `scores` and `cosine` similarities.

    Args:
        config: The ranker.
        scores: BM25 score per entry.
        cosine: Cosine similarity per entry.
        tokens: The query's number of distinct search tokens, which sets the weighted
            fusion's BM25 share ``w`` (`RankerConfig.weight_for`; 0: `bm25_weight`).
        translated: The cosines are those of a Chinese query's dictionary glosses:
            ``w`` is `RankerConfig.crosslingual_weight`.

    Returns:
        Per entry: ``semantic``: minmax(cosine); ``hybrid`` weighted:
        ``w * scores / max(scores) + (1 - w) * minmax(cosine)``; ``hybrid`` rrf:
        ``[scores > 0] / (k + rank_bm25) + 1 / (k + rank_cosine)`` (ranks from 1, ties
        in entry order). 0 for an entry with no BM25 score and a cosine below
        ``min_similarity``; every other entry scores above 0.
    """
    import numpy as np

    keep = (cosine >= config.min_similarity) | (scores > 0)
    if config.kind == "hybrid" and config.fusion == "rrf":
        k = config.rrf_k
        fused = np.where(scores > 0, 1 / (k + _ranks(scores)), 0.0) + 1 / (k + _ranks(cosine))
        return np.where(keep, fused, 0.0)
    low, high = float(cosine.min()), float(cosine.max())
    sem = (cosine - low) / (high - low) if high > low else np.ones_like(cosine)
    if config.kind == "semantic":
        fused = sem
    else:
        w = config.crosslingual_weight if translated else config.weight_for(tokens)
        fused = w * normalized(scores) + (1 - w) * sem
    return np.where(keep, np.maximum(fused, 1e-9), 0.0)


def lift(
    weight: float, *, tools: np.ndarray, groups: np.ndarray, members: np.ndarray
) -> np.ndarray:
    """Two-level scores: each tool's one-level score fused with its group's.

    Args:
        weight: The group share ``g`` in [0, 1].
        tools: One-level scores per tool, each in [0, 1] (BM25 divided by its best, or
            the fused hybrid score).
        groups: BM25 score per group for the same query (any scale; divided by its best).
        members: Per tool, the index of its group in `groups`, or -1 for none.

    Returns:
        ``(1 - g) * tools + g * groups[member] / max(groups)`` for grouped tools,
        `tools` unchanged for the others, and for all when no group matches. A tool no
        query word matches is lifted by a matching group (so it can be found through
        its server); one whose group matches nothing keeps ``(1 - g) * tools``.
    """
    import numpy as np

    top = float(groups.max()) if len(groups) else 0.0
    if weight <= 0 or top <= 0:
        return tools
    share = np.append(groups / top, 0.0)[members]  # members == -1 reads the appended 0
    return np.where(members >= 0, (1 - weight) * tools + weight * share, tools)


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based rank of each value, highest first, ties in index order."""
    import numpy as np

    order = np.lexsort((np.arange(len(values)), -values))
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks


def normalized(scores: np.ndarray) -> np.ndarray:
    """BM25 scores divided by the best one (all zero stays zero)."""
    top = float(scores.max()) if len(scores) else 0.0
    return scores / top if top > 0 else scores
