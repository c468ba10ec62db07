"""Sizes before loading: parameters counted from safetensors headers and from a config, a model that does not fit
refused with its size named, and the estimate of a forward's time (its FLOPs model, by hand)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from tiny_families import DECODER_SIZES, make_tiny
from transformers import LlamaConfig, LlamaModel

from attention_viz.cli import main
from attention_viz.models import sizes
from attention_viz.models.loading import ModelLoadError, load_model


def _numel(model) -> int:
    return sum(p.numel() for p in model.parameters())


def test_the_parameters_of_a_folder_are_counted_from_its_safetensors_headers(family_dir):
    folder = family_dir("llama")
    reference = LlamaModel.from_pretrained(folder)
    # tiny Llama: embeddings vocab × 32; per layer q 32×32, k and v 32×16, o 32×32, gate/up/down 32×37 and two
    # RMSNorms of 32; a final RMSNorm of 32
    by_hand = json.loads((Path(folder) / "config.json").read_text())["vocab_size"] * 32
    by_hand += 2 * (1024 + 512 + 512 + 1024 + 3 * 32 * 37 + 2 * 32) + 32
    assert sizes.safetensors_parameters(folder) == _numel(reference) == by_hand
    need = sizes.memory_need(folder)
    assert need == sizes.MemoryNeed(by_hand, 4 * by_hand, "safetensors")


def test_a_sharded_checkpoint_counts_the_shards_its_index_lists(tmp_path):
    save_file({"a": torch.zeros(3, 5), "b": torch.zeros(7, dtype=torch.bfloat16)}, tmp_path / "part-1.safetensors")
    save_file({"c": torch.zeros(2, 2, 2, dtype=torch.float16)}, tmp_path / "part-2.safetensors")
    save_file({"unlisted": torch.zeros(100)}, tmp_path / "stray.safetensors")  # not in the index: not loaded
    weight_map = {"a": "part-1.safetensors", "b": "part-1.safetensors", "c": "part-2.safetensors"}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    assert sizes.safetensors_parameters(tmp_path) == 15 + 7 + 8
    assert sizes.memory_need(tmp_path).bytes == 4 * 30  # float32, whatever they were saved as
    assert sizes.safetensors_parameters(tmp_path / "nothing-here") is None


def test_the_parameters_of_a_config_are_counted_without_weights():
    config = LlamaConfig(**DECODER_SIZES, vocab_size=1000)
    assert sizes.config_parameters(config) == _numel(LlamaModel(config))
    # a realistic size costs no memory: TinyLlama-1.1B's shapes, 1.03 B without its LM head
    big = LlamaConfig(
        vocab_size=32000,
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=22,
        num_attention_heads=32,
        num_key_value_heads=4,
    )
    per_layer = 2048 * 2048 * 2 + 2048 * 256 * 2 + 3 * 2048 * 5632 + 2 * 2048
    assert sizes.config_parameters(big) == 32000 * 2048 + 22 * per_layer + 2048
    assert sizes.memory_need(None, big).source == "config"
    assert sizes.size_text(sizes.memory_need(None, big).bytes) == "4.14 GB"  # 1,034,512,384 × 4 bytes


def test_a_model_that_does_not_fit_is_refused_before_loading_with_its_size_named(tmp_path):
    folder = make_tiny("llama", tmp_path / "llama")
    need = sizes.memory_need(folder)
    with pytest.raises(ModelLoadError) as refused:
        load_model(folder, available_memory=lambda: need.bytes - 1)
    assert refused.value.code == "too_big"
    assert refused.value.fields["size"] == sizes.size_text(need.bytes)
    assert refused.value.fields["available"] == sizes.size_text(need.bytes - 1)
    assert sizes.size_text(need.bytes) in str(refused.value) and f"{need.parameters:,}" in str(refused.value)
    loaded = load_model(folder, available_memory=lambda: need.bytes)  # exactly enough
    assert loaded.info.parameters == need.parameters and loaded.info.weight_bytes == need.bytes
    assert load_model(folder, available_memory=lambda: None).info.parameters == need.parameters  # unknown: loads


def test_available_memory_reads_memavailable(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # not installed: the kernel's line
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemFree:          100 kB\nMemAvailable:    2048 kB\n")
    assert sizes.available_memory(meminfo) == 2048 * 1024
    meminfo.write_text("MemTotal:       16000000 kB\n")
    assert sizes.available_memory(meminfo) is None
    assert sizes.available_memory(tmp_path / "absent") is None


def test_size_and_duration_texts():
    assert [sizes.size_text(n) for n in (4_400_000_000, 512_000_000, 91_234, 999, 123_456_789_012)] == [
        "4.4 GB",
        "512 MB",
        "91.2 kB",
        "999 B",
        "123 GB",
    ]
    assert [sizes.duration_text(s) for s in (0.0412, 3.24, 125.4)] == ["0.041 s", "3.2 s", "2.1 min"]


def test_the_forward_estimate_scales_the_fastest_timed_forward_by_flops(family_model):
    decoder = family_model("llama").encoder
    # per layer: q, k, v, o, gate, up, down and two RMSNorms; then the final RMSNorm
    matrices = 2 * (1024 + 512 + 512 + 1024 + 3 * 32 * 37 + 2 * 32) + 32
    assert sizes.matrix_parameters(decoder) == matrices
    ticks = iter([0.0, 0.5, 1.0, 1.25, 2.0, 2.75])  # three timed forwards: 0.5 s, 0.25 s, 0.75 s
    estimate = sizes.estimate_forward(decoder, tokens=48, probe=16, repeats=3, clock=lambda: next(ticks))
    flops = lambda t: 2 * t * matrices + 4 * t * t * 8 * 4 * 2  # noqa: E731  (d 8, 4 heads, 2 layers)
    assert sizes.forward_flops(2, matrices, 4, 8, 48) == flops(48)
    assert estimate.measured_tokens == 16 and estimate.measured_seconds == 0.25
    assert estimate.flops_ratio == pytest.approx(flops(48) / flops(16), rel=1e-12)
    assert estimate.seconds == pytest.approx(0.25 * flops(48) / flops(16), rel=1e-12)
    assert estimate.tokens == 48


def test_the_cli_says_what_a_model_takes_and_refuses_what_does_not_fit(family_dir, capsys, monkeypatch):
    folder = family_dir("llama")
    need = sizes.memory_need(folder)
    assert main(["model", "--model", folder, "--tokens", "40"]) == 0
    out, err = capsys.readouterr()
    shown = json.loads(out)
    assert shown["parameters"] == need.parameters and shown["float32_bytes"] == need.bytes
    assert (shown["num_heads"], shown["num_key_value_heads"], shown["heads_per_group"]) == (4, 2, 2)
    assert shown["forward_tokens"] == 40 and shown["forward_seconds_estimate"] > shown["measured_seconds"] > 0
    monkeypatch.setattr(sizes, "available_memory", lambda: 1000)
    assert main(["model", "--model", folder]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and sizes.size_text(need.bytes) in err and "1 kB" in err


def test_the_cli_prints_the_python_apis_description_of_a_model(family_dir, capsys):
    """``model`` and ``attention_viz.describe_model`` are one call: the same fields, the same sizes."""
    from attention_viz import describe_model

    folder = family_dir("llama")
    assert main(["model", "--model", folder, "--tokens", "40"]) == 0
    shown = json.loads(capsys.readouterr().out)
    described = describe_model(load_model(folder), 40)
    assert list(shown) == list(described)
    timed = {"forward_seconds_estimate", "measured_seconds", "available_bytes"}  # measured again: they differ
    assert {k: v for k, v in shown.items() if k not in timed} == {k: v for k, v in described.items() if k not in timed}
    assert described["forward_tokens"] == 40 and described["float32_size"] == sizes.size_text(
        described["float32_bytes"]
    )
    with pytest.raises(ValueError, match="tokens must be at least 1"):
        describe_model(load_model(folder), 0)


def test_a_broken_weights_file_is_not_counted_and_fails_as_unreadable(tmp_path):
    folder = make_tiny("llama", tmp_path / "llama")
    (tmp_path / "llama" / "model.safetensors").write_bytes(b"abc")  # shorter than the header's length field
    with pytest.raises(ModelLoadError) as failed:
        load_model(folder, available_memory=lambda: 1)
    assert failed.value.code == "unreadable"  # the read's own message, not a size
