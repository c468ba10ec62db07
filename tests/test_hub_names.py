"""Today's families load by a hub name from the local cache, as a user who has the model cached has it: each
tiny checkpoint copied into a hub cache as ``org/tiny-<family>`` (``models--org--tiny-<family>/snapshots/<rev>``,
``refs/main``), loaded by that name offline, and its from-scratch twin equal to transformers there too."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from tiny_families import DECODERS
from tiny_seq2seq import make_tiny_seq2seq

from attention_viz.extraction import extract
from attention_viz.extraction.seq2seq import extract_seq2seq
from attention_viz.models.loading import ModelLoadError, load_model, load_seq2seq

TEXT = "Where is it? It is in the box."
REVISION = "0123abc"


def _cache(tmp_path, monkeypatch, name: str, folder: str):
    """Put ``folder`` into a hub cache under ``name`` and point huggingface_hub at that cache."""
    from huggingface_hub import constants

    repo = tmp_path / "hub" / f"models--{name.replace('/', '--')}"
    shutil.copytree(folder, repo / "snapshots" / REVISION)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.mark.parametrize("family", DECODERS)
def test_a_decoder_loads_by_its_hub_name_from_the_cache(tmp_path, monkeypatch, family_dir, family):
    name = f"org/tiny-{family}"
    _cache(tmp_path / "other", monkeypatch, "org/another-model", family_dir(family))
    with pytest.raises(ModelLoadError):  # a name the cache lacks: nothing to read
        load_model(name)
    _cache(tmp_path, monkeypatch, name, family_dir(family))
    loaded = load_model(name)
    assert (loaded.info.name, loaded.info.family, loaded.info.causal) == (name, family, True)
    pretrained, scratch = extract(loaded, TEXT), extract(loaded, TEXT, source="scratch")
    assert pretrained.weights.shape[:2] == (loaded.info.num_layers, loaded.info.num_heads)
    np.testing.assert_allclose(scratch.weights, pretrained.weights, rtol=0, atol=1e-6)
    np.testing.assert_allclose(pretrained.weights.sum(-1), 1, atol=1e-5)


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_an_encoder_decoder_loads_by_its_hub_name_from_the_cache(tmp_path, monkeypatch, family):
    name = f"org/tiny-{family}"
    _cache(tmp_path, monkeypatch, name, make_tiny_seq2seq(family, tmp_path / "built"))
    loaded = load_seq2seq(name)
    assert loaded.info.name == name
    pretrained = extract_seq2seq(loaded, TEXT, "It was tired.", computed_by="pretrained")
    scratch = extract_seq2seq(loaded, TEXT, "It was tired.", computed_by="scratch")
    for kind in ("encoder", "decoder", "cross"):
        ours, theirs = getattr(scratch, kind), getattr(pretrained, kind)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
        np.testing.assert_allclose(theirs.sum(-1), 1, atol=1e-5)
    assert pretrained.cross.shape[-1] == pretrained.encoder.shape[-1]  # keys: the source's tokens
