"""The command line's output and error contract."""

import io
import json
import runpy
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from attention_viz.cli import main
from attention_viz.extraction import extract


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_json_every_layer_and_head(capsys, bundled):
    status, out, err = _run(capsys, "attention", "The cat sat on the mat.")
    assert status == 0 and err == ""
    payload = json.loads(out)
    assert {
        "model",
        "source",
        "variant",
        "tokens",
        "labels",
        "segments",
        "num_layers",
        "num_heads",
        "truncated",
        "attention",
    } <= payload.keys()
    assert payload["model"] == "all-MiniLM-L6-v2" and payload["source"] == "pretrained"
    attention = np.array(payload["attention"])
    assert attention.shape == (6, 12, 9, 9) == (payload["num_layers"], payload["num_heads"], 9, 9)
    assert np.abs(attention - extract(bundled, "The cat sat on the mat.").weights).max() < 1e-7


def test_json_one_head_of_a_pair_from_scratch(capsys, bundled):
    status, out, _ = _run(
        capsys, "attention", "The cat sat", "--pair", "It slept", "--source", "scratch", "--layer", "2", "--head", "5"
    )
    payload = json.loads(out)
    assert status == 0 and payload["variant"] == "exact" and payload["layer"] == 2
    assert payload["segments"] == [0, 0, 0, 0, 0, 1, 1, 1]
    expected = extract(bundled, "The cat sat", "It slept").weights[2, 5]
    assert np.abs(np.array(payload["attention"]) - expected).max() < 1e-5


def test_layer_only_and_head_only(capsys):
    _, out, _ = _run(capsys, "attention", "hi", "--layer", "1")
    assert np.array(json.loads(out)["attention"]).shape == (12, 3, 3)
    _, out, _ = _run(capsys, "attention", "hi", "--head", "4")
    assert np.array(json.loads(out)["attention"]).shape == (6, 3, 3)


def test_csv_is_one_head_with_labels(capsys, bundled):
    status, out, _ = _run(capsys, "attention", "I have a new GPU!", "--layer", "0", "--head", "1", "--format", "csv")
    frame = pd.read_csv(io.StringIO(out), index_col=0)
    labels = ["[CLS]", "I", "have", "a", "new", "GP", "##U", "!", "[SEP]"]
    assert status == 0 and list(frame.index) == labels and list(frame.columns) == labels
    np.testing.assert_allclose(frame.to_numpy(), extract(bundled, "I have a new GPU!").weights[0, 1], atol=1e-7)


def test_random_variant_with_seed(capsys):
    _, out, _ = _run(capsys, "attention", "hi there", "--source", "scratch", "--variant", "random", "--seed", "3")
    payload = json.loads(out)
    assert payload["variant"] == "random" and payload["seed"] == 3


def test_truncation_is_reported(capsys):
    _, out, _ = _run(capsys, "attention", "hello " * 600, "--layer", "0", "--head", "0")
    payload = json.loads(out)
    assert payload["truncated"] and payload["num_input_tokens"] == 602 and len(payload["tokens"]) == 512


@pytest.mark.parametrize(
    "argv, message",
    [
        (["attention", ""], "empty"),
        (["attention", "   "], "empty"),
        (["attention", "hi", "--layer", "6"], "layer 6 is out of range: this model has layers 0-5"),
        (["attention", "hi", "--head", "-1"], "head -1 is out of range"),
        (["attention", "hi", "--model", "no-such-model-xyz"], "could not load model 'no-such-model-xyz'"),
        (["attention", "hi", "--format", "csv"], "give both --layer and --head"),
        (["attention", "hi", "--variant", "fast"], "invalid choice"),
        (["attention", "hi", "--layer", "two"], "invalid int value"),
        (["attention", "hi", "--variant", "random"], "add --source scratch"),
        (["attention", "hi", "--seed", "3"], "add --source scratch"),
        (["attention", "hi", "--source", "scratch", "--variant", "random", "--seed", "-1"], "from 0"),
        (["attention", "hi", "--source", "scratch", "--seed", "4"], "only with --variant random"),
        ([], "required"),
    ],
)
def test_bad_input_exits_2_with_one_error_line(capsys, argv, message):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err


def test_output_that_cannot_be_written_is_one_error_line():
    """In a fresh interpreter: what Python flushes at exit must not add a second line to stderr."""
    with open("/dev/full", "w") as full:
        run = subprocess.run(
            [sys.executable, "-m", "attention_viz", "attention", "hi"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert run.returncode == 1
    assert run.stderr.splitlines() == ["error: could not write the output: No space left on device"]


def _run_module(capsys, monkeypatch, *argv) -> tuple[int, str, str]:
    """``python -m attention_viz ARGV`` in this process: ``attention_viz/__main__.py`` run as ``__main__``
    (a fresh interpreter runs the same file; the test above starts one)."""
    monkeypatch.setattr(sys, "argv", ["attention_viz", *argv])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("attention_viz", run_name="__main__", alter_sys=True)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_module_entry_point(capsys, monkeypatch):
    status, out, _ = _run_module(capsys, monkeypatch, "attention", "hi", "--layer", "0", "--head", "0")
    assert status == 0 and np.array(json.loads(out)["attention"]).shape == (3, 3)
    status, _, err = _run_module(capsys, monkeypatch, "attention", "hi", "--head", "12")
    assert status == 2
    assert err.splitlines() == ["error: head 12 is out of range: this model has heads 0-11"]


@pytest.mark.parametrize("text", ["\u200b", "\ufeff\u00ad"])
def test_invisible_text_exits_2_like_empty_text(capsys, text):
    """Text that BERT's normaliser deletes entirely (zero-width space, byte-order mark, soft hyphen) is empty."""
    status, out, err = _run(capsys, "attention", text)
    assert status == 2 and out == "" and err == "error: the text is empty: type a sentence\n"


def test_invisible_pair_is_reported_as_no_pair(capsys):
    status, out, _ = _run(capsys, "attention", "The cat sat.", "--pair", "\u200b")
    payload = json.loads(out)
    assert status == 0 and not payload["is_pair"] and payload["segments"] == [0] * 6
    _, out, _ = _run(capsys, "attention", "The cat sat.", "--pair", "It slept.")
    payload = json.loads(out)
    assert payload["is_pair"] and payload["segments"] == [0] * 6 + [1] * 4


def test_pair_cut_is_reported(capsys):
    _, out, _ = _run(capsys, "attention", "hello " * 400, "--pair", "world " * 300, "--layer", "0", "--head", "0")
    payload = json.loads(out)
    assert payload["truncated"] and sum(payload["cut"].values()) == 703 - 512 and payload["cut"]["pair"] > 0


def test_half_precision_and_no_token_types_folder(capsys, tmp_path, bundled):
    import torch
    from transformers import AutoModel

    from attention_viz.models.loading import bundled_model_path

    AutoModel.from_pretrained(bundled_model_path()).half().save_pretrained(tmp_path)
    bundled.tokenizer.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    config["model_input_names"] = ["input_ids", "attention_mask"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    status, out, err = _run(capsys, "attention", "The cat sat.", "--pair", "It slept.", "--model", str(tmp_path))
    assert status == 0 and err == "", err
    payload = json.loads(out)
    assert payload["segments"] == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    np.testing.assert_allclose(np.array(payload["attention"]).sum(-1), 1, atol=1e-6)
    assert torch.get_default_dtype() == torch.float32


def test_character_limit_and_bad_setting_exit_2(capsys, monkeypatch):
    monkeypatch.setenv("ATTENTION_VIZ_MAX_CHARS", "5")
    status, _, err = _run(capsys, "attention", "0123456789")
    assert status == 2 and err == "error: the text has 10 characters; the limit is 5: shorten it\n"
    monkeypatch.setenv("ATTENTION_VIZ_MAX_CHARS", "lots")
    status, _, err = _run(capsys, "attention", "hi")
    assert status == 2 and "max_chars must be a whole number" in err and err.count("\n") == 1


def test_model_outside_the_allow_list_exits_2(capsys, monkeypatch):
    monkeypatch.setenv("ATTENTION_VIZ_ALLOWED_MODELS", "prajjwal1/bert-tiny")
    status, _, err = _run(capsys, "attention", "hi", "--model", "bert-base-uncased")
    assert status == 2 and "not on this server's list of models" in err
