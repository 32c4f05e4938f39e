"""Document embeddings: built once per text, shared in the process, cached on disk.

A `VectorStore` belongs to one `Encoder` (its key covers the model file's sha256, the
tokenizer and the truncation) and maps a document's text hash (sha256 of its UTF-8
bytes) to its vector. Every index over the same texts in the process reuses the vectors,
so sessions with the same catalog embed it once, and a mode change that rebuilds an
index embeds nothing.

On disk, a tool set's vectors are one ``.npz`` file (text hashes and float32 vectors)
under ``<cache dir>/embeddings/<encoder key>/``, named by the hash of the set's text
hashes in order; a new process with the same catalog loads it in milliseconds instead of
embedding again. The default cache dir is ``$CONTEXTCHEF_CACHE_DIR``, else
``$XDG_CACHE_HOME/contextchef``, else ``~/.cache/contextchef``. A directory that cannot
be written only costs the reuse (logged); a damaged file is ignored and rebuilt.

Building runs in a background thread by default (`VectorStore.request`), so the first
searches are answered by BM25 until the vectors are ready; ``background=False`` builds
in the calling thread.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from contextchef._cache import LruMap
from contextchef.search._model import EmbeddingStopped, Encoder

if TYPE_CHECKING:
    import numpy as np

__all__ = ["VectorStore", "default_cache_dir", "store_for", "text_hash"]

_LOG = logging.getLogger("contextchef.search")
_MATRICES = 8
"""Gathered matrices kept per store (one per distinct tool set)."""

_STOP = threading.Event()
"""Set at interpreter exit: background builds stop before their next model run."""
_BUILDERS: set[threading.Thread] = set()
_BUILDERS_LOCK = threading.Lock()
_AT_EXIT: list[bool] = []  # [True] once the exit hook is registered


def _start_builder(thread: threading.Thread) -> None:
    with _BUILDERS_LOCK:
        if not _AT_EXIT:
            atexit.register(stop_background_builds)
            _AT_EXIT.append(True)
        _BUILDERS.add(thread)
    thread.start()


def stop_background_builds() -> None:
    """Stop the background embedding threads and wait for them (run at interpreter exit).

    A daemon thread still inside onnxruntime when the interpreter finalizes aborts the
    process (SIGABRT, "terminate called without an active exception"); each build stops
    before its next model run (a batch of 8 texts), so this waits at most about one
    batch. Builds requested afterwards are not started (BM25 answers alone).
    """
    _STOP.set()
    with _BUILDERS_LOCK:
        threads = list(_BUILDERS)
    for thread in threads:
        if thread is not threading.current_thread():
            thread.join()


def text_hash(text: str) -> str:
    """Hex sha256 of a document text (the cache key of its vector)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def default_cache_dir() -> Path:
    """Where embeddings are cached when no directory is given (see the module docstring)."""
    env = os.environ.get("CONTEXTCHEF_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "contextchef"


def _set_key(hashes: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


class VectorStore:
    """The vectors of one encoder, by document text hash (thread-safe).

    Args:
        encoder: The model that makes the vectors.
        cache_dir: Root of the disk cache, or None for memory only.
    """

    def __init__(self, encoder: Encoder, cache_dir: Path | None) -> None:
        self.encoder = encoder
        self.directory = cache_dir / "embeddings" / encoder.key[:32] if cache_dir else None
        self._vectors: dict[str, np.ndarray] = {}
        self._matrices: LruMap[str, np.ndarray] = LruMap(_MATRICES)
        self._jobs: dict[str, threading.Event] = {}
        self._pending: dict[str, threading.Event] = {}
        self._errors: dict[str, BaseException] = {}
        self._lock = threading.Lock()

    def request(self, hashes: Sequence[str], texts: Sequence[str], *, background: bool) -> None:
        """Make sure the vectors of these texts exist or are being built.

        Vectors already in memory cost nothing, nor do texts another build is embedding
        already (not `background`: this call waits for a build of the same set); a disk
        file for this exact set is loaded in the calling thread (milliseconds); anything
        else is embedded, in a daemon thread when `background`, and the set written to
        disk afterwards.

        Raises:
            EmbeddingModelError: Only when not `background`: the model cannot run.
        """
        key = _set_key(hashes)
        if background and _STOP.is_set():
            return  # the interpreter is exiting
        with self._lock:
            running = self._jobs.get(key)
            if running is None and all(h in self._vectors for h in hashes):
                return
        if running is not None:  # another thread builds this very set
            if not background:  # the caller needs the vectors now: wait for that build
                running.wait()
                error = self._errors.get(key)
                if error is not None:
                    raise error
            return
        with self._lock:
            if key in self._jobs or all(h in self._vectors for h in hashes):
                return  # started or finished in between: asked again if still missing
            self._load_disk(key)
            others = {self._pending[h] for h in hashes if h in self._pending}
            missing: dict[str, str] = {}
            for h, t in zip(hashes, texts, strict=True):
                if h not in self._vectors and h not in self._pending:
                    missing[h] = t
            if not missing and not others:
                return
            done = threading.Event()
            self._jobs[key] = done
            for h in missing:
                self._pending[h] = done
        job = (key, list(hashes), list(missing.items()), others, done)
        if background:
            _start_builder(
                threading.Thread(
                    target=self._build, args=job, name="contextchef-embed", daemon=True
                )
            )
        else:
            self._build(*job)
            error = self._errors.get(key)
            if error is not None:
                raise error

    def _build(
        self,
        key: str,
        hashes: list[str],
        missing: list[tuple[str, str]],
        others: set[threading.Event],
        done: threading.Event,
    ) -> None:
        try:
            if missing:
                vectors = self.encoder.encode([t for _, t in missing], stop=_STOP)
                with self._lock:
                    for (h, _), vector in zip(missing, vectors, strict=True):
                        self._vectors[h] = vector
            for other in others:  # texts that another build was embedding
                other.wait()
            if _STOP.is_set():
                raise EmbeddingStopped("embedding stopped: the interpreter is exiting")
            self._save_disk(key, hashes)
        except EmbeddingStopped:
            pass  # the interpreter is exiting; nothing is saved
        except Exception as exc:  # a background thread must not die silently
            _LOG.warning("embedding %d tool texts failed; BM25 answers alone: %s", len(hashes), exc)
            self._errors[key] = exc
        finally:
            with self._lock:
                self._jobs.pop(key, None)
                for h, _ in missing:
                    self._pending.pop(h, None)
            done.set()
            with _BUILDERS_LOCK:
                _BUILDERS.discard(threading.current_thread())

    def embed_now(self, hashes: Sequence[str], texts: Sequence[str]) -> None:
        """Embed the texts not in memory yet, in the calling thread (runtime tools)."""
        with self._lock:
            missing = [(h, t) for h, t in zip(hashes, texts, strict=True) if h not in self._vectors]
        if not missing:
            return
        vectors = self.encoder.encode([t for _, t in missing])
        with self._lock:
            for (h, _), vector in zip(missing, vectors, strict=True):
                self._vectors[h] = vector

    def matrix(self, hashes: Sequence[str]) -> np.ndarray | None:
        """The vectors of `hashes` as one (n, dim) array, or None while any is missing."""
        import numpy as np

        key = _set_key(hashes)
        found = self._matrices.get(key)
        if found is not None:
            return found
        with self._lock:
            if not all(h in self._vectors for h in hashes):
                return None
            rows = [self._vectors[h] for h in hashes]
        out = np.stack(rows) if rows else np.zeros((0, 1), dtype=np.float32)
        out.setflags(write=False)
        self._matrices.put(key, out)
        return out

    def wait(self, hashes: Sequence[str], timeout: float | None = None) -> bool:
        """Block until the builds embedding this set end (or `timeout` s); True when ready."""
        with self._lock:
            events = {self._pending[h] for h in hashes if h in self._pending}
            job = self._jobs.get(_set_key(hashes))
        if job is not None:
            events.add(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        for event in events:
            event.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self.matrix(hashes) is not None

    def error(self, hashes: Sequence[str]) -> BaseException | None:
        """Why the last build of this set failed, or None."""
        return self._errors.get(_set_key(hashes))

    def _path(self, key: str) -> Path | None:
        return self.directory / f"{key[:40]}.npz" if self.directory else None

    def _load_disk(self, key: str) -> None:
        """Load a cached set into memory (caller holds the lock); damaged files are ignored."""
        import numpy as np

        path = self._path(key)
        if path is None or not path.is_file():
            return
        try:
            with np.load(path, allow_pickle=False) as data:
                raw, vectors = data["hashes"], data["vectors"]
                if raw.ndim != 2 or raw.shape[1] != 32 or vectors.shape[0] != raw.shape[0]:
                    raise ValueError(f"shapes {raw.shape} and {vectors.shape} do not match")
                vectors = vectors.astype(np.float32, copy=False)
            for digest, vector in zip(raw, vectors, strict=True):
                self._vectors.setdefault(bytes(digest).hex(), vector)
        except (OSError, ValueError, KeyError) as exc:
            _LOG.warning("ignoring the damaged embedding cache %s: %s", path, exc)

    def _save_disk(self, key: str, hashes: list[str]) -> None:
        import numpy as np

        path = self._path(key)
        if path is None:
            return
        with self._lock:
            unique = list(dict.fromkeys(hashes))
            if not all(h in self._vectors for h in unique):
                return  # another build failed: nothing complete to write
            vectors = np.stack([self._vectors[h] for h in unique])
        raw = np.frombuffer(b"".join(bytes.fromhex(h) for h in unique), dtype=np.uint8)
        tmp: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                np.savez(f, hashes=raw.reshape(len(unique), 32), vectors=vectors)
            os.replace(tmp, path)
        except OSError as exc:
            _LOG.warning("cannot write the embedding cache %s: %s", path, exc)
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)


_STORES: dict[tuple[str, str | None], VectorStore] = {}
_STORES_LOCK = threading.Lock()


def store_for(encoder: Encoder, cache_dir: Path | None) -> VectorStore:
    """The process-wide store of `encoder` with this disk cache (None: memory only)."""
    key = (encoder.key, str(cache_dir) if cache_dir else None)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = VectorStore(encoder, cache_dir)
    return store
