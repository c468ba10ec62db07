"""Loading: the bundled model offline, any BERT folder, clear errors."""

import os
import shutil
import socket

import pytest
from transformers import AutoTokenizer, RobertaConfig, RobertaModel

from attention_viz.loading import (
    BUNDLED_MODEL,
    ModelLoadError,
    bundled_model_path,
    hub_unreachable_reason,
    load_model,
)


def test_bundled_model_loads_offline(bundled):
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    info = bundled.info
    assert (info.name, info.num_layers, info.num_heads, info.hidden_size, info.head_dim) == (
        BUNDLED_MODEL,
        6,
        12,
        384,
        32,
    )
    assert (info.vocab_size, info.max_positions) == (30522, 512)
    assert not bundled.model.training and not bundled.encoder.training
    assert bundled.model.config._attn_implementation == "eager"


def test_bundled_aliases():
    assert load_model("sentence-transformers/all-MiniLM-L6-v2").info.path == str(bundled_model_path())


def test_tiny_folder_loads_by_path(tiny_model_dir):
    loaded = load_model(tiny_model_dir)
    assert (loaded.info.num_layers, loaded.info.num_heads, loaded.info.head_dim) == (2, 4, 8)
    assert loaded.info.name == tiny_model_dir


def test_unknown_model_names_what_was_tried():
    with pytest.raises(ModelLoadError, match=r"'no-such-model-xyz'.*no folder.*not in the cache.*offline"):
        load_model("no-such-model-xyz")


def test_hub_is_not_asked_when_its_host_does_not_resolve(monkeypatch):
    from huggingface_hub import constants

    def no_dns(*args, **kwargs):
        raise OSError("Name or service not known")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    assert hub_unreachable_reason() == "huggingface.co cannot be reached"
    with pytest.raises(ModelLoadError, match=r"hub not asked: huggingface\.co cannot be reached"):
        load_model("no-such-model-xyz")


def test_folder_without_config(tmp_path):
    with pytest.raises(ModelLoadError, match=r"no config\.json"):
        load_model(str(tmp_path))


def test_safetensors_only(tmp_path, tiny_model_dir):
    folder = tmp_path / "pickled"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="could not load"):
        load_model(str(folder))


def test_non_bert_model_is_refused(tmp_path):
    config = RobertaConfig(
        vocab_size=30522,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=40,
    )
    RobertaModel(config).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(bundled_model_path()).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="only BERT"):
        load_model(str(tmp_path))
