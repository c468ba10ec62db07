"""Named head scores: known answers on hand-made maps, the definitions on real attention of every family,
and a hand-built GPT-2 whose planted previous-token and induction heads the scores must find."""

from __future__ import annotations

import numpy as np
import pytest
from induction_model import INDUCTION_HEAD, PREVIOUS_HEAD, make_induction_gpt2
from tiny_families import FAMILIES

from attention_viz.analysis import head_scores as hs
from attention_viz.extraction import Encoding
from attention_viz.extraction.capture import pretrained_attention


def _maps(*heads: np.ndarray) -> np.ndarray:
    return np.stack(heads)[None]  # (1, h, t, t)


def _previous_pattern(t: int) -> np.ndarray:
    a = np.eye(t, k=-1)
    a[0, 0] = 1.0
    return a


def _causal_uniform(t: int) -> np.ndarray:
    return np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]


def test_previous_token_pattern_scores_one_and_uniform_scores_one_over_t():
    t = 7
    scores = hs.previous_token_scores(_maps(_previous_pattern(t), np.full((t, t), 1 / t), np.eye(t)))
    np.testing.assert_allclose(scores, [[1.0, 1 / t, 0.0]])


def test_causal_uniform_previous_and_sink_are_the_mean_of_one_over_i():
    t = 6
    expected = np.mean([1 / (i + 1) for i in range(1, t)])  # query i spreads over i + 1 keys
    np.testing.assert_allclose(hs.previous_token_scores(_maps(_causal_uniform(t))), [[expected]])
    np.testing.assert_allclose(hs.sink_scores(_maps(_causal_uniform(t))), [[expected]])


def test_sink_leaves_out_query_zero():
    t = 5
    to_first = np.zeros((t, t))
    to_first[:, 0] = 1.0
    half = np.full((t, t), 0.0)
    half[:, 0], half[:, 1] = 0.5, 0.5
    half[0] = [0, 0, 0, 0, 1]  # query 0 does not count
    np.testing.assert_allclose(hs.sink_scores(_maps(to_first, half)), [[1.0, 0.5]])


def test_duplicate_token_counts_only_queries_with_an_earlier_copy():
    ids = np.array([7, 3, 7, 9, 3, 7])
    t = len(ids)
    a = np.full((t, t), 1 / t)
    # query 2 (7): copy at 0; query 4 (3): copy at 1; query 5 (7): copies at 0 and 2
    expected = np.mean([1 / t, 1 / t, 2 / t])
    np.testing.assert_allclose(hs.duplicate_token_scores(_maps(a), ids), [[expected]])
    assert np.isnan(hs.duplicate_token_scores(_maps(a), np.arange(t))).all()  # nothing repeats


def _induction_pattern(start: int, n: int, t: int) -> np.ndarray:
    a = np.zeros((t, t))
    a[:, 0] = 1.0
    for i in range(start + n, start + 2 * n):
        a[i] = 0.0
        a[i, i - n + 1] = 1.0
    return a


def test_induction_pattern_scores_one_and_other_heads_score_their_share():
    start, n = 1, 4
    t = start + 2 * n + 1
    maps = _maps(_induction_pattern(start, n, t), np.full((t, t), 1 / t), _previous_pattern(t))
    np.testing.assert_allclose(hs.induction_scores(maps, start, n), [[1.0, 1 / t, 0.0]])


def test_induction_refuses_a_sequence_too_short_for_two_copies():
    with pytest.raises(ValueError, match="2 copies"):
        hs.induction_scores(np.full((1, 1, 5, 5), 0.2), 1, 3)


def test_scores_of_a_batch_are_the_mean_of_each_map():
    rng = np.random.default_rng(0)
    batch = rng.random((3, 2, 2, 6, 6))
    batch /= batch.sum(-1, keepdims=True)
    for score in (hs.previous_token_scores, hs.sink_scores):
        np.testing.assert_allclose(score(batch), np.mean([score(b) for b in batch], axis=0))


def test_ordinary_vocabulary_has_no_special_no_byte_piece_no_reserved(bundled, family_model):
    gpt2 = family_model("gpt2").tokenizer
    vocab = set(hs.ordinary_vocabulary(gpt2).tolist())
    assert not vocab & set(gpt2.all_special_ids)
    assert all("\ufffd" not in gpt2.decode([i]) for i in vocab)
    assert gpt2.convert_tokens_to_ids("Ã") not in vocab  # a lone byte of a two-byte character
    bert = bundled.tokenizer
    words = set(hs.ordinary_vocabulary(bert).tolist())
    assert bert.convert_tokens_to_ids("[unused5]") not in words and bert.cls_token_id not in words
    assert bert.convert_tokens_to_ids("cat") in words


def test_random_sequences_repeat_exactly_and_controls_do_not(bundled, family_model):
    seqs = hs.random_sequences(bundled.tokenizer, count=3, length=6, seed=4)
    assert seqs.start == 1 and seqs.num_tokens == 14
    assert (seqs.repeated[:, 0] == bundled.tokenizer.cls_token_id).all()
    assert (seqs.repeated[:, -1] == bundled.tokenizer.sep_token_id).all()
    np.testing.assert_array_equal(seqs.repeated[:, 1:7], seqs.repeated[:, 7:13])
    assert all(len(set(row[1:13])) == 12 for row in seqs.control)
    assert all(len(set(row[1:7])) == 6 for row in seqs.repeated)
    again = hs.random_sequences(bundled.tokenizer, count=3, length=6, seed=4)
    np.testing.assert_array_equal(seqs.repeated, again.repeated)
    assert not np.array_equal(seqs.repeated, hs.random_sequences(bundled.tokenizer, 3, 6, seed=5).repeated)
    gpt2 = family_model("gpt2").tokenizer
    decoder = hs.random_sequences(gpt2, count=2, length=5, causal=True)
    assert (decoder.repeated[:, 0] == gpt2.bos_token_id).all() and decoder.start == 1 and decoder.num_tokens == 11


def test_random_sequences_say_the_longest_that_fits(family_model):
    tokenizer = family_model("albert").tokenizer
    most = len(hs.ordinary_vocabulary(tokenizer)) // 2
    with pytest.raises(ValueError, match=f"at most {most} tokens"):
        hs.random_sequences(tokenizer, 1, most + 1)


def _encoding(ids: np.ndarray, tokenizer) -> Encoding:
    t = len(ids)
    return Encoding(
        input_ids=ids.astype(np.int64),
        token_type_ids=np.zeros(t, dtype=np.int64),
        tokens=tuple(tokenizer.convert_ids_to_tokens(ids.tolist())),
        labels=tuple(tokenizer.convert_ids_to_tokens(ids.tolist())),
        word_ids=np.arange(t, dtype=np.int64),
        segments=np.zeros(t, dtype=np.int64),
        special=np.zeros(t, dtype=bool),
        num_input_tokens=t,
        truncated=False,
    )


def _by_definition(a: np.ndarray, ids: np.ndarray, start: int, n: int, special: np.ndarray) -> dict[str, float]:
    """One head's scores written out as loops over the query positions."""
    t = len(ids)
    copies = [i for i in range(t) if any(ids[j] == ids[i] for j in range(i))]
    return {
        "previous": np.mean([a[i, i - 1] for i in range(1, t)]),
        "sink": np.mean([a[i, 0] for i in range(1, t)]),
        "induction": np.mean([a[i, i - n + 1] for i in range(start + n, start + 2 * n)]),
        "duplicate": np.mean([sum(a[i, j] for j in range(i) if ids[j] == ids[i]) for i in copies])
        if copies
        else np.nan,
        "cls_sep": np.mean([a[i, special].sum() for i in range(t)]),
    }


def _check_against_definition(loaded, count: int, length: int) -> None:
    scores = hs.model_head_scores(loaded, count, length, seed=1)
    seqs = hs.random_sequences(loaded.tokenizer, count, length, seed=1, causal=loaded.info.causal)
    for kind, ids in (("repeated", seqs.repeated), ("control", seqs.control)):
        weights = [pretrained_attention(loaded.model, _encoding(row, loaded.tokenizer)) for row in ids]
        for layer in range(loaded.info.num_layers):
            for head in range(loaded.info.num_heads):
                per_seq = [_by_definition(w[layer, head], row, seqs.start, length, seqs.special) for w, row in
                           zip(weights, ids, strict=True)]  # fmt: skip
                for name in ("previous", "sink", "induction", "duplicate", "cls_sep"):
                    got = getattr(scores, kind)[name][layer, head]
                    if name == "cls_sep" and loaded.info.causal:
                        assert np.isnan(got)
                        continue
                    want = np.mean([s[name] for s in per_seq])
                    np.testing.assert_allclose(got, want, atol=1e-6, equal_nan=True, err_msg=f"{kind} {name}")
    assert np.isnan(scores.control["duplicate"]).all()
    assert not np.isnan(scores.repeated["duplicate"]).any()


def test_scores_equal_the_definition_on_the_bundled_model(bundled):
    _check_against_definition(bundled, count=2, length=12)


@pytest.mark.parametrize("family", FAMILIES)
def test_scores_equal_the_definition_for_every_family(family, family_model):
    _check_against_definition(family_model(family), count=2, length=10)


@pytest.fixture(scope="module")
def induction_model(tmp_path_factory):
    from attention_viz.models.loading import load_model

    return load_model(make_induction_gpt2(tmp_path_factory.mktemp("induction-gpt2")))


def test_the_planted_heads_are_found(induction_model):
    scores = hs.model_head_scores(induction_model, count=4, length=30)
    repeated, control = scores.repeated, scores.control
    assert repeated["induction"][INDUCTION_HEAD] > 0.99
    assert control["induction"][INDUCTION_HEAD] < 0.05  # nothing to match: attention spreads out
    assert repeated["previous"][PREVIOUS_HEAD] > 0.99 and control["previous"][PREVIOUS_HEAD] > 0.99
    others = np.ones((2, 2), dtype=bool)
    others[INDUCTION_HEAD] = False
    assert (repeated["induction"][others] < 0.05).all()
    others = np.ones((2, 2), dtype=bool)
    others[PREVIOUS_HEAD] = False
    assert (repeated["previous"][others] < 0.1).all()
    frame = hs.scores_frame(scores)
    assert list(frame.columns[:4]) == ["layer", "head", "induction", "induction_control"]
    top = frame.sort_values("induction", ascending=False).iloc[0]
    assert (top["layer"], top["head"]) == INDUCTION_HEAD


def test_too_long_for_the_positions_says_the_most(induction_model):
    with pytest.raises(ValueError, match="at most 63 tokens"):
        hs.model_head_scores(induction_model, 1, 64)


def test_estimate_is_positive_and_progress_counts_every_sequence(induction_model):
    assert hs.estimate_seconds(induction_model, 3, 10) > 0
    seen = []
    hs.model_head_scores(induction_model, 3, 10, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (6, 6) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_stop_ends_the_run_between_batches(induction_model):
    from attention_viz.analysis import CancelledError

    seen = []
    with pytest.raises(CancelledError, match="cancelled after 4 of 10 sequences"):
        hs.model_head_scores(
            induction_model, 5, 10, progress=lambda done, total: seen.append(done), cancel=lambda: len(seen) == 2
        )
    assert seen == [2, 4]  # no batch ran after Stop was asked


def test_score_columns_are_the_chosen_scores_and_their_controls(induction_model):
    scores = hs.model_head_scores(induction_model, 2, 10)
    columns = hs.score_columns(scores, ["sink", "induction"])
    frame = hs.scores_frame(scores)
    assert list(columns.columns) == [
        "layer",
        "head",
        "score_sink",
        "score_sink_control",
        "score_induction",
        "score_induction_control",
    ]
    np.testing.assert_array_equal(columns["score_induction_control"], frame["induction_control"])


def test_gpt2_small_published_heads_only_for_gpt2_small():
    from attention_viz.analysis import published

    found = published.published_score_heads("openai-community/gpt2", 12, 12)
    assert {(h.layer, h.head) for h in found if h.task == "induction"} == {(5, 1), (5, 5), (6, 9), (7, 2), (7, 10)}
    assert [(h.layer, h.head) for h in found if h.task == "previous"] == [(4, 11)]
    assert all(h.task in hs.SCORES for h in found)  # each names the score it is marked on
    assert (
        published.published_score_heads("gpt2", 6, 12) == () and published.published_score_heads("bert", 12, 12) == ()
    )
