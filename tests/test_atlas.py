"""The head atlas: top events and folding against sorting every event, the typical sample against attention,
the Parquet file, and the command line."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from attention_viz import cli
from attention_viz.analysis import atlas
from attention_viz.extraction import batch as padded

TEXTS = [
    ("The cat sat on the mat.", None),
    ("The dog sat on the mat, and the cat sat on the dog.", None),
    ("Is it going to rain tomorrow afternoon?", "It rained all day yesterday."),
    ("Two plus two equals four.", None),
    ("The the the the.", None),
    ("医生说伤口几个星期就会好。", None),
]


def _every_event(loaded, texts, batch_size: int):
    """Each text's weights, tokens and special keys, in the atlas's batches (a text's weights in another batch
    differ in the last bits: another padding length)."""
    weights, tokens, special = [], [], []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        inputs, rows = padded.encode_batch(
            loaded.tokenizer, chunk, loaded.info.max_positions, loaded.encoder.config.type_vocab_size
        )
        cut = padded.batch_attention(loaded.model, inputs, [len(r.input_ids) for r in rows])
        for row, w in zip(rows, cut, strict=True):
            weights.append(w.copy())
            tokens.append(loaded.tokenizer.convert_ids_to_tokens(row.input_ids))
            special.append(atlas.special_keys(row.special, loaded.info.causal))
    return weights, tokens, special


def _brute_force(weights, tokens, special, top: int, fold: bool, exclude: bool, causal: bool):
    """Every head's top events by sorting all events of the corpus:
    ``{(layer, head): [(text, query, key, weight, folded), ...]}``."""
    layers, heads = weights[0].shape[:2]
    found = {}
    for layer in range(layers):
        for head in range(heads):
            events = []
            for text, (w, strings, sp) in enumerate(zip(weights, tokens, special, strict=True)):
                allowed = atlas.allowed_keys(len(strings), sp, exclude, causal)
                for q, k in zip(*np.nonzero(allowed), strict=True):
                    pair = (strings[q], strings[k]) if fold else (text, q, k)
                    events.append(((-float(w[layer, head, q, k]), text, int(q), int(k)), pair))
            events.sort(key=lambda event: event[0])
            chosen, counts = [], {}
            for order, pair in events:  # walk from the strongest until the top-th pair has appeared
                counts[pair] = counts.get(pair, 0) + 1
                if counts[pair] == 1:
                    chosen.append((order, pair))
                    if len(chosen) == top:
                        break
            found[layer, head] = [(o[1], o[2], o[3], -o[0], counts[p]) for o, p in chosen]
    return found


def _atlas_top(built: atlas.Atlas):
    top = built.events[built.events["kind"] == "top"]
    found = {}
    for (layer, head), rows in top.groupby(["layer", "head"]):
        rows = rows.sort_values("rank")
        found[layer, head] = list(
            zip(rows["text"], rows["query"], rows["key"], rows["weight"], rows["folded"], strict=True)
        )
    return found


@pytest.mark.parametrize(("fold", "exclude"), [(True, True), (False, True), (True, False), (False, False)])
def test_top_events_of_the_bundled_model_equal_sorting_every_event(bundled, fold, exclude):
    built = atlas.build_atlas(bundled, TEXTS, top=6, sample=0, fold=fold, exclude=exclude, batch_size=4)
    expected = _brute_force(*_every_event(bundled, TEXTS, 4), 6, fold, exclude, causal=False)
    assert _atlas_top(built) == expected
    assert len(expected) == 72 and all(len(rows) == 6 for rows in expected.values())
    if fold:  # folding bites: some pair stands for several events, and no pair repeats within a head
        assert max(row[4] for rows in expected.values() for row in rows) > 1
        top = built.events[built.events["kind"] == "top"]
        assert not top.duplicated(["layer", "head", "query_token", "key_token"]).any()
    else:
        assert (built.events["folded"] == 1).all()
    if exclude:  # no event onto [CLS]/[SEP] or onto the query itself
        assert not built.events["key_token"].isin(["[CLS]", "[SEP]"]).any()
        assert (built.events["distance"] != 0).all()


def test_top_events_of_a_decoder_equal_sorting_every_event_and_leave_its_first_token_out(family_model):
    gpt2 = family_model("gpt2")
    built = atlas.build_atlas(gpt2, TEXTS, top=5, sample=10, batch_size=3)
    expected = _brute_force(*_every_event(gpt2, TEXTS, 3), 5, True, True, causal=True)
    assert _atlas_top(built) == expected
    assert (built.events["key"] > 0).all()  # position 0 is the sink: left out
    assert (built.events["distance"] < 0).all()  # a decoder attends to earlier tokens only, never itself
    special = built.heads["special"].to_numpy()
    assert (special > 0).all() and (special < 1).all()


def test_the_atlas_does_not_depend_on_the_batch_size_and_folds_a_repeated_corpus(bundled):
    one = atlas.build_atlas(bundled, TEXTS, top=8, sample=5, seed=3, batch_size=1)
    six = atlas.build_atlas(bundled, TEXTS, top=8, sample=5, seed=3, batch_size=6)
    # the same events; their weights differ in the last bits (another padding length)
    pd.testing.assert_frame_equal(one.events, six.events, atol=1e-5, check_exact=False)
    pd.testing.assert_frame_equal(one.heads, six.heads, atol=1e-5, check_exact=False)
    one = six
    twice = atlas.build_atlas(bundled, TEXTS * 2, top=8, sample=0, batch_size=6)  # the same batches twice
    top_once = one.events[one.events["kind"] == "top"].reset_index(drop=True)
    top_twice = twice.events.reset_index(drop=True)
    # every event now twice over, but the last row's copy: as strong as the last row, from a later text
    last = top_once["rank"] == 7
    assert (top_twice["folded"][~last] == 2 * top_once["folded"][~last]).all()
    assert (top_twice["folded"][last] == 2 * top_once["folded"][last] - 1).all()
    pd.testing.assert_frame_equal(top_twice.drop(columns="folded"), top_once.drop(columns="folded"))


def test_the_typical_sample_is_reproducible_by_seed_and_never_a_left_out_event(bundled):
    first = atlas.build_atlas(bundled, TEXTS, top=3, sample=12, seed=7)
    again = atlas.build_atlas(bundled, TEXTS, top=3, sample=12, seed=7)
    other = atlas.build_atlas(bundled, TEXTS, top=3, sample=12, seed=8)
    typical = first.events[first.events["kind"] == "typical"]
    pd.testing.assert_frame_equal(typical, again.events[again.events["kind"] == "typical"])
    assert not typical.reset_index(drop=True).equals(
        other.events[other.events["kind"] == "typical"].reset_index(drop=True)
    )
    assert len(typical) == 72 * 12 and (typical["weight"] > 0).all()
    assert not typical["key_token"].isin(["[CLS]", "[SEP]"]).any() and (typical["distance"] != 0).all()
    weights, _, _ = _every_event(bundled, TEXTS, 16)
    for row in typical.sample(40, random_state=0).itertuples():
        assert row.weight == float(weights[row.text][row.layer, row.head, row.query, row.key])


def test_the_typical_sample_draws_events_in_proportion_to_their_attention():
    """Four events spread over two texts, weights 0.1 … 0.4, one drawn per run: over 4000 seeds each is drawn
    about 400 … 1600 times (chi-square with 3 degrees of freedom below 16.3, p = 0.001)."""
    weights = [np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2, 2))]
    weights[0][0, 0, 0] = [0.1, 0.2]
    weights[1][0, 0, 0] = [0.3, 0.4]
    allowed = np.array([[True, True], [False, False]])  # only query 0's events
    runs, drawn = 4000, []
    for seed in range(runs):
        reservoir = atlas.Reservoir(1, 1, 1)
        for text, w in enumerate(weights):
            reservoir.add(atlas.sample_keys(w, allowed, seed, text), w, text)
        drawn.append(float(reservoir.weight[0, 0, 0]))
    counts = np.array([drawn.count(w) for w in (0.1, 0.2, 0.3, 0.4)])
    expected = runs * np.array([0.1, 0.2, 0.3, 0.4])
    assert counts.sum() == runs
    assert ((counts - expected) ** 2 / expected).sum() < 16.3
    # two of four drawn without replacement: the lightest is in fewer samples than the heaviest
    pairs = []
    for seed in range(1000):
        reservoir = atlas.Reservoir(1, 1, 2)
        for text, w in enumerate(weights):
            reservoir.add(atlas.sample_keys(w, allowed, seed, text), w, text)
        pairs.append(sorted(reservoir.weight[0, 0].tolist()))
    assert all(a != b for a, b in pairs)
    assert sum(0.1 in p for p in pairs) < sum(0.4 in p for p in pairs)


def test_the_parquet_file_round_trips_and_a_wrong_file_is_refused(bundled, tmp_path):
    built = atlas.build_atlas(bundled, TEXTS, top=4, sample=3)
    path = tmp_path / "atlas.parquet"
    built.to_parquet(path)
    back = atlas.read_atlas(path)
    pd.testing.assert_frame_equal(back.events, built.events)
    pd.testing.assert_frame_equal(back.heads, built.heads)
    assert back.texts == built.texts and back.model == built.model and back.options == built.options
    assert (back.num_texts, back.num_tokens) == (built.num_texts, built.num_tokens) == (6, back.num_tokens)
    assert atlas.read_atlas(built.to_parquet()).texts == built.texts  # from bytes, as the app's upload
    events = back.head_events(2, 3)
    assert list(events["rank"]) == [0, 1, 2, 3]
    for row in events.itertuples():
        a, b = TEXTS[row.text]
        assert row.sentence == (a if b is None else f"{a} / {b}")
    with pytest.raises(atlas.AtlasFileError, match="not a Parquet file"):
        atlas.read_atlas(b"The cat sat on the mat.")
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "other.parquet")
    with pytest.raises(atlas.AtlasFileError, match="not a head atlas"):
        atlas.read_atlas(tmp_path / "other.parquet")


def test_the_head_numbers_are_the_corpus_statistics_and_scores(bundled):
    from attention_viz.analysis import corpus_statistics

    built = atlas.build_atlas(bundled, TEXTS, top=4, sample=0)
    statistics = corpus_statistics(bundled, TEXTS).statistics
    for name in ("entropy", "cls", "sep", "previous", "distance", "self"):
        np.testing.assert_allclose(built.heads[name], statistics[name], atol=1e-9)
    weights, _, special = _every_event(bundled, TEXTS, 16)
    expected = sum(w[..., sp].sum((-1, -2)) for w, sp in zip(weights, special, strict=True)) / sum(
        w.shape[-1] for w in weights
    )
    np.testing.assert_allclose(built.heads["special"], expected.reshape(-1), atol=1e-6)
    top = built.events.groupby(["layer", "head"])["weight"].mean()
    np.testing.assert_allclose(built.heads["top_weight"], top.to_numpy(), atol=1e-12)


def test_the_command_line_writes_the_atlas_and_prints_its_tables(bundled, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(a if b is None else f"{a}\t{b}" for a, b in TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / "atlas.parquet"
    assert cli.main(["atlas", str(corpus), "--out", str(out), "--top", "4", "--sample", "3"]) == 0
    assert capsys.readouterr().out == ""
    saved = atlas.read_atlas(out)
    expected = atlas.build_atlas(bundled, TEXTS, top=4, sample=3)
    pd.testing.assert_frame_equal(saved.events, expected.events)
    assert cli.main(["atlas", str(corpus), "--top", "2", "--sample", "0", "--no-fold", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["options"]["fold"] is False and len(payload["events"]) == 72 * 2
    assert cli.main(["atlas", str(corpus), "--top", "2", "--sample", "0", "--table", "heads"]) == 0
    heads = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(heads) == 72 and {"special", "top_weight", "entropy", "sink"} <= set(heads.columns)
    assert cli.main(["atlas", str(corpus), "--top", "0"]) == 2
    assert "--top must be at least 1" in capsys.readouterr().err
    assert cli.main(["atlas", str(tmp_path / "missing.txt")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("split", [0, 1, 37, 150, 299])
@pytest.mark.parametrize("fold", [True, False])
def test_two_streams_of_top_events_merge_into_what_one_stream_keeps(split, fold):
    """300 texts of 4 tokens on 2 heads, weights in twentieths (many ties), 3 token strings: offered in two
    streams cut at ``split`` and merged, they keep the same rows as one stream, and as sorting every event;
    however often the stream is settled."""
    rng = np.random.default_rng(split)
    weights = (rng.integers(0, 20, (300, 1, 2, 4, 4)) / 20).astype(np.float32)
    tokens = [[f"t{x}" for x in rng.integers(0, 3, 4)] for _ in range(300)]
    allowed = np.ones((4, 4), dtype=bool)
    one, first, second = (atlas.TopEvents(1, 2, 5, fold) for _ in range(3))
    for text in range(300):
        one.offer(weights[text], allowed, tokens[text], text)
        (first if text < split else second).offer(weights[text], allowed, tokens[text], text)
        if text % 7 == 6:
            one.settle()
    rows = one.rows()
    assert first.merge(second).rows() == rows
    no_special = [np.zeros(4, dtype=bool)] * 300
    expected = _brute_force(list(weights), tokens, no_special, 5, fold, False, causal=False)
    found = {}
    for layer, head, rank, text, q, k, query_token, key_token, weight, folded in rows:
        assert rank == len(found.setdefault((layer, head), []))
        assert (query_token, key_token) == (tokens[text][q], tokens[text][k])
        found[layer, head].append((text, q, k, weight, folded))
    assert found == expected
    assert max(row[4] for head in found.values() for row in head) > (1 if fold else 0)


def test_a_reservoir_settled_once_keeps_what_adding_text_by_text_keeps():
    """Keys with many ties (and weights of 0, never drawn) over 40 texts: offered all before one settle, as
    the atlas does for a batch, the reservoir holds what adding them one at a time holds, which is each head's
    largest keys, on a tie the earlier event."""
    rng = np.random.default_rng(5)
    texts = [rng.integers(0, 6, (2, 3, 3, 3)).astype(np.float64) / 5 for _ in range(40)]
    allowed = ~np.eye(3, dtype=bool)
    one_by_one, at_once = atlas.Reservoir(2, 3, 4), atlas.Reservoir(2, 3, 4)
    every = {}  # (layer, head) -> (-key, text, query, key position) of every event that can be drawn
    for text, w in enumerate(texts):
        keys = -np.round(rng.random(w.shape) * 4) - 1  # -5 … -1: ties
        keys[(w <= 0) | ~np.broadcast_to(allowed, w.shape)] = -np.inf
        one_by_one.add(keys, w, text)
        at_once.offer(keys, w, text)
        for layer, head, q, k in zip(*np.nonzero(np.isfinite(keys)), strict=True):
            every.setdefault((layer, head), []).append((-keys[layer, head, q, k], text, q, k))
    at_once.settle()
    for name in atlas.Reservoir.NAMES:
        np.testing.assert_array_equal(getattr(at_once, name), getattr(one_by_one, name))
    for (layer, head), events in every.items():
        expected = sorted(events, key=lambda e: e[0])[:4]  # a stable sort: on a tie the earlier event
        kept = zip(at_once.text[layer, head], at_once.query[layer, head], at_once.key_pos[layer, head], strict=True)
        assert [(t, q, k) for _, t, q, k in expected] == list(kept)
    assert len(set(at_once.key.reshape(-1).tolist())) < at_once.key.size  # ties were kept
