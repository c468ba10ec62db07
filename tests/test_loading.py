"""Loading: the bundled model offline, any BERT folder, clear errors."""

import contextlib
import json
import os
import shutil
import socket

import pytest
from transformers import AutoTokenizer, MPNetConfig, MPNetModel

from attention_viz import settings
from attention_viz.models.loading import (
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


@pytest.mark.parametrize("name", ["/no/such/folder", "./typo-folder/", "C:\\models\\bert"])
def test_a_missing_folder_is_named_as_neither_a_folder_nor_a_hub_name(name):
    """A mistyped path is not a hub id: the message says so instead of the hub's naming rules."""
    with pytest.raises(ModelLoadError, match=r"there is no folder .*, and it is not a hub name") as raised:
        load_model(name)
    assert raised.value.code == "not_found" and "alphanumeric" not in str(raised.value)


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


def test_a_model_of_no_supported_family_is_refused_naming_the_families(tmp_path):
    config = MPNetConfig(
        vocab_size=30527,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=40,
    )
    MPNetModel(config).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(bundled_model_path()).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="'mpnet' model; only these families are supported: albert, bert") as info:
        load_model(str(tmp_path))
    assert info.value.code == "not_bert"
    assert info.value.fields["families"] == (
        "albert, bert, distilbert, electra, gemma2, gpt2, llama, mistral, qwen2, qwen3, roberta, xlm-roberta"
    )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_checkpoint_loads_as_float32(tmp_path, bundled, dtype):
    """The bundled model saved in float16 or bfloat16 loads as float32 (transformers 5 would keep the saved
    dtype, whose rows sum to 1 only within about 4e-4 or 2e-3): rows within 1e-6, the from-scratch encoder
    exact, and the result close to, not equal to, the float32 model's (the weights were rounded when saved)."""
    import numpy as np
    import torch
    from transformers import AutoModel

    from attention_viz.extraction import extract

    AutoModel.from_pretrained(bundled_model_path()).to(getattr(torch, dtype)).save_pretrained(tmp_path)
    bundled.tokenizer.save_pretrained(tmp_path)
    loaded = load_model(str(tmp_path))
    assert loaded.info.checkpoint_dtype == dtype and bundled.info.checkpoint_dtype == "float32"
    assert {p.dtype for p in loaded.model.parameters()} == {torch.float32}
    text = "The cat sat on the mat."
    result = extract(loaded, text)
    np.testing.assert_allclose(result.weights.sum(-1), 1, atol=1e-6)
    assert np.array_equal(extract(loaded, text, source="scratch").weights, result.weights)  # exact parity
    # the weights were rounded when saved: close to the float32 model's, not equal
    difference = np.abs(result.weights - extract(bundled, text).weights).max()
    assert 1e-5 < difference < (2e-3 if dtype == "float16" else 2e-2)


def test_quantised_weights_get_a_message_naming_the_dtype(tmp_path, tiny_model_dir, monkeypatch):
    import torch

    from attention_viz.models import loading

    real = loading._read_checkpoint

    def int8_model(source, local_only):
        tokenizer, model = real(source, local_only)
        model.embeddings.word_embeddings.weight = torch.nn.Parameter(
            torch.zeros_like(model.embeddings.word_embeddings.weight, dtype=torch.int8), requires_grad=False
        )
        return tokenizer, model

    monkeypatch.setattr(loading, "_read_checkpoint", int8_model)
    with pytest.raises(ModelLoadError, match="cannot be read as float32") as caught:
        load_model(tiny_model_dir)
    assert caught.value.code == "dtype"


def test_remote_code_is_never_trusted(tmp_path, tiny_model_dir):
    folder = tmp_path / "remote"
    shutil.copytree(tiny_model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "evil.EvilModel"}
    (folder / "config.json").write_text(json.dumps(config))
    marker = tmp_path / "ran"
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    with contextlib.suppress(ModelLoadError):  # refusing is fine; running the file is not
        load_model(str(folder))
    assert not marker.exists()


def test_pickle_weights_are_refused_even_beside_safetensors_names(tmp_path, tiny_model_dir):
    folder = tmp_path / "pickled"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelLoadError) as caught:
        load_model(str(folder))
    assert caught.value.code == "unreadable" and caught.value.fields["name"] == str(folder)


@pytest.fixture
def no_transformers(monkeypatch):
    """Fail the test if transformers is asked to read anything."""
    from attention_viz.models import loading

    def refuse(*args, **kwargs):
        raise AssertionError("transformers was called for a refused name")

    monkeypatch.setattr(loading, "_read_checkpoint", refuse)


@pytest.mark.parametrize("name", ["bert-base-uncased", "/etc", "../outside", "inside/../../outside", "~"])
def test_allow_list_and_root_refuse_before_transformers(tmp_path, no_transformers, name):
    root = tmp_path / "models"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    policy = settings.ModelPolicy(allowed=("prajjwal1/bert-tiny",), root=str(root))
    with pytest.raises(ModelLoadError) as caught:
        load_model(name, policy)
    assert caught.value.code in {"not_allowed", "outside_root"}


def test_a_link_out_of_the_root_is_refused(tmp_path, tiny_model_dir, no_transformers):
    root = tmp_path / "models"
    root.mkdir()
    (root / "tiny").symlink_to(tiny_model_dir)
    with pytest.raises(ModelLoadError, match="outside this server's model folder") as caught:
        load_model("tiny", settings.ModelPolicy(root=str(root)))
    assert caught.value.code == "outside_root"


def test_folders_inside_the_root_and_listed_names_load(tmp_path, tiny_model_dir):
    root = tmp_path / "models"
    shutil.copytree(tiny_model_dir, root / "tiny")
    policy = settings.ModelPolicy(allowed=(tiny_model_dir,), root=str(root))
    assert load_model("tiny", policy).info.path == str(root / "tiny")
    assert load_model(tiny_model_dir, policy).info.num_heads == 4
    assert load_model(None, policy).info.name == BUNDLED_MODEL  # the bundled model always loads


def test_policy_from_the_environment(tmp_path, monkeypatch, no_transformers):
    monkeypatch.setenv("ATTENTION_VIZ_ALLOWED_MODELS", " a/b , c ")
    monkeypatch.setenv("ATTENTION_VIZ_MODEL_ROOT", str(tmp_path))
    loaded = settings.load()
    assert loaded.models.allowed == ("a/b", "c") and loaded.models.root == str(tmp_path)
    with pytest.raises(ModelLoadError, match="not on this server's list"):
        load_model("bert-base-uncased", loaded.models)


def test_unrestricted_by_default():
    assert not settings.load(env={}).models.restricted
