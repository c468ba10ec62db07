"""``python -m attention_viz stats FILE``: output and the exit-2 ``error:`` contract."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from attention_viz.analysis import TokenKinds, head_statistics
from attention_viz.cli import main
from attention_viz.extraction import extract


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("The cat sat on the mat.\n\n", encoding="utf-8")
    return path


def test_csv_one_row_per_head_matching_the_text_view(capsys, bundled, corpus_file):
    status, out, err = _run(capsys, "stats", str(corpus_file), "--batch-size", "2")
    assert status == 0
    assert "stats" in err and "error" not in err  # the tqdm bar
    frame = pd.read_csv(io.StringIO(out), keep_default_na=False, na_values=[""])
    assert list(frame.columns[:2]) == ["layer", "head"] and len(frame) == 72
    result = extract(bundled, "The cat sat on the mat.")
    expected = head_statistics(result.weights, TokenKinds.from_encoding(result.encoding))
    np.testing.assert_allclose(frame["self"], expected["self"], atol=1e-6)
    assert list(frame["tags"].fillna("")) == list(expected["tags"])


def test_json_with_pairs_and_importance(capsys, tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_text("The cat sat.\tIt slept.\n猫坐在垫子上。\n", encoding="utf-8")
    status, out, _ = _run(capsys, "stats", str(path), "--format", "json", "--importance")
    assert status == 0
    payload = json.loads(out)
    assert payload["model"] == "all-MiniLM-L6-v2" and payload["num_texts"] == 2
    heads = payload["heads"]
    assert len(heads) == 72 and (heads[5]["layer"], heads[5]["head"]) == (0, 5)
    assert 0 <= heads[0]["a_to_b"] <= 1 and heads[0]["importance"] > 0


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (None, [], "no such file"),
        (" \n\n", [], "the corpus is empty"),
        (b"\xff\xfe bad", [], "not UTF-8"),
        ("ok\n", ["--batch-size", "0"], "--batch-size must be at least 1"),
        ("ok\n", ["--format", "xml"], "invalid choice"),
    ],
)
def test_errors_exit_2_with_one_line(capsys, tmp_path, content, extra, message):
    path = tmp_path / "input.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    status, out, err = _run(capsys, "stats", str(path), *extra)
    assert status == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_folder_is_an_error(capsys, tmp_path):
    status, _, err = _run(capsys, "stats", str(tmp_path))
    assert status == 2 and "is a folder" in err


def test_the_cli_the_python_api_and_the_app_make_one_corpus_run(capsys, bundled, tmp_path):
    """``stats FILE``, ``attention_viz.statistics_of_corpus`` and the app's Head statistics give the same numbers
    for a file's text, its blank lines counted as skipped in each."""
    from attention_viz import statistics_of_corpus
    from attention_viz.ui.server import cache_heads

    text = "The cat sat on the mat.\n\n  \nWhere is it?\tIn the box.\n"
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    status, out, _ = _run(capsys, "stats", str(path), "--format", "json", "--batch-size", "2")
    assert status == 0
    shown = json.loads(out)
    ours = statistics_of_corpus(bundled, text, batch_size=2)
    cache_heads._corpus_runs().clear()
    app = cache_heads.corpus_statistics(bundled, text, 2, False)
    for result in (ours, app):
        assert (result.num_texts, result.num_skipped, result.num_tokens) == (2, 2, shown["num_tokens"])
        np.testing.assert_allclose(result.statistics["entropy"], [h["entropy"] for h in shown["heads"]], atol=1e-9)
    assert (shown["num_texts"], shown["num_skipped"]) == (2, 2)
    assert app.divergence is not None and ours.divergence is None  # the app's Head similarity needs it
