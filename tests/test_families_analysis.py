"""Every family through the analyses, the command line and the public API (tiny random checkpoints)."""

import json

import numpy as np
import pytest
import torch
from tiny_families import FAMILIES

from attention_viz import analysis
from attention_viz.analysis import article_compare, steps
from attention_viz.analysis.importance import cosine_distance, mean_pool
from attention_viz.cli import main
from attention_viz.extraction import encode, extract

TEXT = "The animal didn't cross the street because it was too tired."
CORPUS = [
    ("The cat sat on the mat.", None),
    ("Where is it?", "It is in the box."),
    ("Attention is all you need.", None),
]


def _upper(t: int) -> np.ndarray:
    return np.triu(np.ones((t, t), bool), k=1)


@pytest.mark.parametrize("family", FAMILIES)
def test_corpus_statistics_importance_and_similarity(family_model, family):
    loaded = family_model(family)
    result = analysis.corpus_statistics(loaded, CORPUS, batch_size=2, importance=True, divergence=True)
    frame = result.statistics
    layers, heads = loaded.info.num_layers, loaded.info.num_heads
    assert len(frame) == layers * heads and result.num_texts == 3
    assert (frame["importance"] >= 0).all() and frame["importance"].max() > 0
    assert result.divergence.shape == (layers * heads, layers * heads)
    if family == "gpt2":  # no later token to attend to, no [CLS]/[SEP], pairs read as one text: not applicable
        for column in ("next", "a_to_b", "b_to_a", "cls", "sep"):
            assert frame[column].isna().all(), column
        assert frame["previous"].notna().all() and frame["entropy"].notna().all()
    else:
        for column in ("next", "a_to_b", "b_to_a", "cls", "sep"):
            assert frame[column].notna().all() and (frame[column] > 0).any(), column


@pytest.mark.parametrize("family", FAMILIES)
def test_text_statistics_know_the_familys_specials(family_model, family):
    loaded = family_model(family)
    result = extract(loaded, TEXT)
    tokenizer = loaded.tokenizer
    kinds = analysis.TokenKinds.from_encoding(result.encoding, tokenizer.cls_token, tokenizer.sep_token)
    assert kinds.cls.sum() == kinds.sep.sum() == (0 if family == "gpt2" else 1)
    frame = analysis.head_statistics(result.weights, kinds, loaded.info.causal)
    assert frame["next"].isna().all() == (family == "gpt2")
    assert np.isclose(frame["previous"].notna().sum(), len(frame))


@pytest.mark.parametrize("family", FAMILIES)
def test_inside_a_head_reproduces_the_pretrained_head(family_model, family):
    """The step-by-step computation (the layer's input, its projections, one head) gives the model's map."""
    loaded = family_model(family)
    encoding = encode(loaded.tokenizer, TEXT)
    pretrained = extract(loaded, TEXT).weights
    layer = loaded.info.num_layers - 1
    hidden = steps.layer_inputs(loaded.encoder, encoding)[layer]
    for head in range(loaded.info.num_heads):
        queries, keys, values = steps.head_vectors(loaded.encoder, hidden, layer, head)
        scaling = steps.scaling_factor("exact", loaded.info.head_dim, loaded.info.hidden_size)
        result = steps.head_steps(queries, keys, values, 1, scaling, causal=loaded.info.causal)
        np.testing.assert_allclose(result.all_weights, pretrained[layer, head], atol=1e-6)
    if loaded.info.causal:
        assert np.all(result.weights[2:] == 0) and np.all(result.all_weights[_upper(encoding.num_tokens)] == 0)


@pytest.mark.parametrize("family", FAMILIES)
def test_rollout_norms_and_the_articles_layer(family_model, family):
    loaded = family_model(family)
    encoding = encode(loaded.tokenizer, TEXT)
    t = encoding.num_tokens
    for layer in range(loaded.info.num_layers):
        views = analysis.rollout_and_norms(loaded.encoder, encoding, layer)
        np.testing.assert_allclose(views.raw, extract(loaded, TEXT).weights[layer].mean(0), atol=1e-6)
        np.testing.assert_allclose(views.rollout.sum(-1), 1, atol=1e-9)
        assert (views.norm >= 0).all() and views.norm_per_head.shape == (loaded.info.num_heads, t, t)
        if loaded.info.causal:  # nothing flows from a later token, in any view
            assert np.all(views.rollout[_upper(t)] == 0) and np.all(views.norm[_upper(t)] == 0)
    hidden = steps.layer_inputs(loaded.encoder, encoding)[0]
    correct, article = article_compare.seeded_layers(loaded.info.hidden_size, loaded.info.num_heads, 0)
    weights = article_compare.variant_weights(hidden, correct, article, ["shared", "embed_scaling"])
    assert weights.shape == (loaded.info.num_heads, t, t)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("source", ["pretrained", "scratch"])
def test_command_line(capsys, family_dir, family_model, family, source):
    status = main(["attention", TEXT, "--model", family_dir(family), "--source", source, "--layer", "1"])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    payload = json.loads(out)
    expected = extract(family_model(family), TEXT, source=source).weights[1]
    assert np.abs(np.array(payload["attention"]) - expected).max() < 1e-7
    assert not any(marker in label for label in payload["labels"] for marker in ("Ġ", "▁"))


def test_command_line_refuses_a_pair_for_a_decoder(capsys, family_dir):
    status = main(["attention", "Where is it?", "--pair", "In the box.", "--model", family_dir("gpt2")])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.startswith("error: this model reads one text, not a sentence pair") and err.count("\n") == 1


def test_command_line_stats_for_a_decoder(capsys, tmp_path, family_dir):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat.\nWhere is it?\tIt is in the box.\n", encoding="utf-8")
    status = main(["stats", str(corpus), "--model", family_dir("gpt2"), "--format", "json"])
    out, _ = capsys.readouterr()
    heads = json.loads(out)["heads"]
    assert status == 0 and len(heads) == 8
    assert all(head["next"] is None and head["a_to_b"] is None for head in heads)  # not applicable, not 0


def test_clarks_heads_are_marked_for_bert_base_uncased_only():
    from attention_viz.analysis import published

    heads = published.published_heads("bert-base-uncased", 12, 12)
    by_paper = {h.paper_head: h for h in heads}
    assert (by_paper["8-10"].layer, by_paper["8-10"].head, by_paper["8-10"].accuracy) == (7, 9, 86.8)  # dobj
    assert (by_paper["8-11"].layer, by_paper["8-11"].head, by_paper["8-11"].accuracy) == (7, 10, 94.3)  # det
    assert (by_paper["9-6"].layer, by_paper["9-6"].head) == (8, 5) and by_paper["5-4"].task == "coreference"
    assert published.published_heads("google-bert/bert-base-uncased", 12, 12) == heads
    assert published.published_heads("bert-base-uncased", 6, 12) == ()  # another model under that name
    assert published.published_heads("all-MiniLM-L6-v2", 12, 12) == ()
    notes = published.head_notes(heads, 12, 12)
    assert notes[7 * 12 + 9] == "dobj 86.8%" and notes[0] == "" and len(notes) == 144


def _definition(encoder, input_ids, attention_mask):
    """Head importance summed over the batch by its definition: a full forward per head with it switched off."""
    layers, heads = encoder.config.num_hidden_layers, encoder.config.num_attention_heads
    pooled = lambda mask=None: mean_pool(  # noqa: E731
        encoder(input_ids, None, attention_mask, head_mask=mask).last_hidden_state, attention_mask
    )
    sums = np.zeros((layers, heads))
    with torch.inference_mode():
        reference = pooled()
        for layer in range(layers):
            for head in range(heads):
                mask = torch.ones(layers, heads)
                mask[layer, head] = 0
                sums[layer, head] = cosine_distance(pooled(mask), reference).double().sum()
    return sums


@pytest.mark.parametrize("family", FAMILIES)
def test_importance_equals_one_forward_per_head_in_every_family(family_model, family):
    """Switching a head off in its own layer and reusing the layers below gives the definition's numbers,
    whatever the family's layer (post- or pre-LayerNorm, causal, shared weights, a final LayerNorm)."""
    loaded = family_model(family)
    encoded = [loaded.tokenizer(text) for text in ("The cat sat on the mat.", "Where is it?", "Attention.")]
    pad = loaded.tokenizer.pad_token_id or 0
    t = max(len(e["input_ids"]) for e in encoded)
    ids = torch.tensor([e["input_ids"] + [pad] * (t - len(e["input_ids"])) for e in encoded])  # right padding
    mask = torch.tensor([[1] * len(e["input_ids"]) + [0] * (t - len(e["input_ids"])) for e in encoded])
    found = analysis.importance_sums(loaded.encoder, ids, None, mask)
    np.testing.assert_allclose(found / 3, _definition(loaded.encoder, ids, mask) / 3, atol=1e-6, rtol=0)
    assert (found > 0).all()
