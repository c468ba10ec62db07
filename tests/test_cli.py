"""The command line's output and error contract."""

import io
import json
import os
import re
import runpy
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from browser import free_port, wait_until

from attention_viz import cli
from attention_viz.cli import main
from attention_viz.extraction import extract

ROOT = Path(__file__).resolve().parent.parent


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


# --- the console script, `attention-viz` ---------------------------------------------------------------

SCRIPT = Path(sys.executable).parent / "attention-viz"  # installed by `pip install -e .` (pyproject's scripts)


def test_the_console_script_has_the_module_s_subcommands(tmp_path):
    shown = {}
    for name, command in {"script": [str(SCRIPT)], "module": [sys.executable, "-m", "attention_viz"]}.items():
        done = subprocess.run([*command, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        shown[name] = re.search(r"\{([a-z,]+)\}", done.stdout).group(1).split(",")
    assert shown["script"] == shown["module"] == ["attention", "stats", "atlas", "model", "app"]
    assert 'attention-viz = "attention_viz.cli:entry"' in (ROOT / "pyproject.toml").read_text()


def test_the_console_script_prints_attention_from_another_folder(tmp_path, bundled):
    done = subprocess.run(
        [str(SCRIPT), "attention", "The cat sat.", "--layer", "1", "--head", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )
    assert done.returncode == 0, done.stderr
    expected = extract(bundled, "The cat sat.").weights[1, 2]
    np.testing.assert_allclose(np.array(json.loads(done.stdout)["attention"]), expected, atol=1e-6)


def test_app_starts_the_checkout_s_server_from_another_folder(tmp_path):
    """`attention-viz app --server.port P`, run in an empty folder: the process becomes `streamlit run app.py`
    in the checkout, which answers Streamlit's health check and the app's own readiness route."""
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(SCRIPT), "app", "--server.port", str(port), "--server.address", "127.0.0.1"],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, HF_HUB_OFFLINE="1"),
        )
    url = f"http://127.0.0.1:{port}"

    def answers(path: str) -> int | None:
        if server.poll() is not None:
            raise AssertionError(f"the app exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            return urllib.request.urlopen(url + path, timeout=2).status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    try:
        wait_until(lambda: answers("/_stcore/health") == 200, 180, f"no health check:\n{log.read_text()[-3000:]}")
        assert answers("/ready") in (200, 503)  # app.py's own route: this is the checkout's app, served by st.App
        command = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")[1:]
        assert command[:4] == [b"-m", b"streamlit", b"run", b"app.py"]  # the script's process became the server
        assert Path(f"/proc/{server.pid}/cwd").resolve() == ROOT  # the checkout's .streamlit/ settings apply
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_app_without_a_checkout_is_one_error_line(capsys, monkeypatch, tmp_path):
    installed = tmp_path / "site-packages" / "attention_viz"  # a wheel's install: the package, no app.py
    installed.mkdir(parents=True)
    assert cli.checkout_app(installed) is None
    assert cli.checkout_app(ROOT / "attention_viz") == ROOT / "app.py"
    monkeypatch.setattr(cli, "checkout_app", lambda: None)
    status, out, err = _run(capsys, "app", "--server.port", "8600")
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: `app` runs app.py from the source checkout")
    assert "pip install -e ." in err
