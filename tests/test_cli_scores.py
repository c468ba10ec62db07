"""``python -m attention_viz stats --scores``: named head scores on random tokens, alone or beside a corpus."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from attention_viz.analysis import head_scores
from attention_viz.cli import main


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_scores_alone_as_csv_match_the_api(capsys, bundled):
    status, out, err = _run(
        capsys, "stats", "--scores", "induction,sink", "--score-sequences", "2", "--score-length", "6"
    )
    assert status == 0, err
    frame = pd.read_csv(io.StringIO(out))
    assert list(frame.columns) == [
        "layer", "head", "score_induction", "score_induction_control", "score_sink", "score_sink_control"
    ]  # fmt: skip
    expected = head_scores.model_head_scores(bundled, 2, 6)
    np.testing.assert_allclose(frame["score_induction"], expected.repeated["induction"].reshape(-1), atol=1e-7)
    np.testing.assert_allclose(frame["score_sink_control"], expected.control["sink"].reshape(-1), atol=1e-7)


def test_scores_beside_corpus_statistics_as_json(capsys, bundled, tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("The cat sat on the mat.\n", encoding="utf-8")
    argv = ("stats", str(path), "--format", "json", "--scores", "previous,duplicate")
    status, out, err = _run(capsys, *argv, "--score-sequences", "1", "--score-length", "5", "--score-seed", "2")
    assert status == 0, err
    payload = json.loads(out)
    assert payload["num_texts"] == 1
    assert payload["scores"] | {"seconds": 0} == {
        "sequences": 1, "length": 5, "seed": 2, "tokens_per_sequence": 12, "seconds": 0
    }  # fmt: skip
    heads = payload["heads"]
    assert len(heads) == 72 and {"entropy", "previous", "score_previous", "score_duplicate_control"} <= set(heads[0])
    expected = head_scores.model_head_scores(bundled, 1, 5, seed=2)
    assert heads[13]["score_duplicate"] == pytest.approx(expected.repeated["duplicate"][1, 1], abs=1e-8)
    assert heads[13]["score_duplicate_control"] is None  # nothing repeats in a control: NaN, written null


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("stats",), "give a text file, or --scores"),
        (("stats", "--scores", "induction,loops"), "--scores takes names from induction,previous"),
        (("stats", "--scores", "sink", "--score-length", "400"), "at most 255 tokens"),
    ],
)
def test_score_errors_exit_2_with_one_line(capsys, argv, message):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
