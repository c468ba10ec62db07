"""The from-scratch encoder reproduces transformers' BERT: attention to 1e-5, hidden states to 1e-4."""

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from attention_viz.extraction import extract
from attention_viz.models import families
from attention_viz.models.encoder import (
    PARITY_BOUND,
    BertEncoder,
    Variant,
    WeightMismatchError,
    load_weights,
    transformers_name,
)

SENTENCES = [
    "The cat sat on the mat.",
    "The animal didn't cross the street because it was too tired.",
    "Unbelievably, the GPU's tokenizer split 'transformerification' into pieces!",
    "我爱自然语言处理。 Naïve café déjà vu.",
    " ".join(["Attention is all you need, or so the paper says."] * 20),
]
PAIRS = [("The cat sat on the mat", "The cat lay on the rug"), ("Where is it?", "It is in the box.")]


def _compare(model, encoder, batch):
    with torch.inference_mode():
        expected = model(**batch, output_attentions=True)
        ours = encoder(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    assert len(expected.attentions) == len(ours.attentions) == model.config.num_hidden_layers
    for layer, (a, b) in enumerate(zip(ours.attentions, expected.attentions, strict=True)):
        assert_close(a, b, atol=1e-5, rtol=0, msg=f"layer {layer}")
    assert_close(ours.last_hidden_state, expected.last_hidden_state, atol=1e-4, rtol=0)
    return ours


@pytest.mark.parametrize("text", SENTENCES)
def test_parity_bundled_sentences(bundled, text):
    batch = bundled.tokenizer(text, return_tensors="pt")
    _compare(bundled.model, bundled.encoder, batch)


@pytest.mark.parametrize("pair", PAIRS)
def test_parity_bundled_pair(bundled, pair):
    batch = bundled.tokenizer(*pair, return_tensors="pt")
    assert batch["token_type_ids"].any()
    _compare(bundled.model, bundled.encoder, batch)


@pytest.mark.parametrize("inputs", [(SENTENCES[1],), (SENTENCES[-1],), PAIRS[0]])
def test_bundled_attention_is_bit_for_bit(bundled, inputs):
    """Same kernels in the same order as transformers' eager path: not close, equal (the Difference map is 0)."""
    batch = bundled.tokenizer(*inputs, return_tensors="pt")
    with torch.inference_mode():
        expected = bundled.model(**batch, output_attentions=True).attentions
        ours = bundled.encoder(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]).attentions
    assert [torch.equal(a, b) for a, b in zip(ours, expected, strict=True)] == [True] * 6


def test_parity_bundled_padded_batch(bundled):
    batch = bundled.tokenizer(
        SENTENCES[:3], ["", "short B", "a much longer sentence B, with commas"], return_tensors="pt", padding=True
    )
    assert (batch["attention_mask"] == 0).any()
    ours = _compare(bundled.model, bundled.encoder, batch)
    padded = batch["attention_mask"] == 0
    for weights in ours.attentions:  # no real query attends to a padded key
        assert weights.transpose(1, 3)[padded].abs().max() == 0


def test_parity_through_extract(bundled):
    text = SENTENCES[1]
    pretrained = extract(bundled, text).weights
    scratch = extract(bundled, text, source="scratch").weights
    assert pretrained.shape == (6, 12, 16, 16)  # didn ' t: three pieces
    assert np.abs(pretrained - scratch).max() <= PARITY_BOUND


def test_parity_tiny_random_configs(tiny_model):
    batch = tiny_model.tokenizer(
        ["the cat sat", "a dog ran after the cat quickly"], ["on a mat", ""], return_tensors="pt", padding=True
    )
    ours = _compare(tiny_model.model, tiny_model.encoder, batch)
    heads = tiny_model.model.config.num_attention_heads
    assert ours.attentions[0].shape == (2, heads, batch["input_ids"].shape[1], batch["input_ids"].shape[1])
    # the fixture sharpens query/key weights: attention is far from uniform, so parity is not trivial
    assert ours.attentions[-1].max() > 0.5


def test_hidden_states_are_every_layer(bundled):
    batch = bundled.tokenizer("hello world", return_tensors="pt")
    with torch.inference_mode():
        expected = bundled.model(**batch, output_hidden_states=True)
        ours = bundled.encoder(batch["input_ids"], batch["token_type_ids"])
    assert len(ours.hidden_states) == 7
    for a, b in zip(ours.hidden_states, expected.hidden_states, strict=True):
        assert_close(a, b, atol=1e-4, rtol=0)


def test_name_mapping():
    assert transformers_name("layers.3.attention.query.weight") == "encoder.layer.3.attention.self.query.weight"
    assert transformers_name("layers.0.attention.output.bias") == "encoder.layer.0.attention.output.dense.bias"
    assert transformers_name("layers.1.output_norm.weight") == "encoder.layer.1.output.LayerNorm.weight"
    assert transformers_name("embeddings.LayerNorm.bias") == "embeddings.LayerNorm.bias"


def _load_bert_weights(encoder: BertEncoder, state_dict: dict) -> None:
    """A ``BertModel`` state dict into ``encoder`` by the BERT family's names, as loading does."""
    family = families.family_for("bert")
    load_weights(encoder, state_dict, lambda name: family.checkpoint_name(name, encoder.config), family.unused)


def test_every_weight_is_checked(bundled):
    state = dict(bundled.model.state_dict())
    fresh = BertEncoder(bundled.encoder.config)
    missing = {k: v for k, v in state.items() if k != "encoder.layer.2.attention.self.key.bias"}
    with pytest.raises(WeightMismatchError, match=r"encoder\.layer\.2\.attention\.self\.key\.bias"):
        _load_bert_weights(fresh, missing)
    wrong = dict(state, **{"embeddings.word_embeddings.weight": torch.zeros(10, 384)})
    with pytest.raises(WeightMismatchError, match="shape"):
        _load_bert_weights(fresh, wrong)
    extra = dict(state, **{"encoder.layer.0.attention.self.distance_embedding.weight": torch.zeros(3)})
    with pytest.raises(WeightMismatchError, match="does not use"):
        _load_bert_weights(fresh, extra)


def test_variants_change_only_the_scaling(bundled):
    text = SENTENCES[0]
    exact = extract(bundled, text, source="scratch").weights
    article = extract(bundled, text, source="scratch", variant="article-scaling").weights
    unscaled = extract(bundled, text, source="scratch", variant=Variant.NO_SCALING).weights
    entropy = {
        name: -(w * np.log(w + 1e-30)).sum(-1).mean()
        for name, w in {"exact": exact, "article": article, "unscaled": unscaled}.items()
    }
    # sqrt(12) times hotter softmax is flatter; no scaling at all is sharper
    assert entropy["article"] > entropy["exact"] > entropy["unscaled"]
    assert Variant.ARTICLE_SCALING.scaling(384) == pytest.approx(384**-0.5)
    assert Variant.EXACT.scaling(384) is None


def test_random_variant_is_reproducible_from_its_seed(bundled):
    first = extract(bundled, "the cat sat", source="scratch", variant="random", seed=7)
    again = extract(bundled, "the cat sat", source="scratch", variant="random", seed=7)
    other = extract(bundled, "the cat sat", source="scratch", variant="random", seed=8)
    assert first.seed == 7 and first.variant == "random"
    assert np.array_equal(first.weights, again.weights)
    assert not np.array_equal(first.weights, other.weights)
    np.testing.assert_allclose(first.weights.sum(-1), 1, atol=1e-5)
    # untrained BERT (std 0.02) attends almost uniformly: entropy near log(5)
    entropy = -(first.weights * np.log(first.weights)).sum(-1)
    assert entropy.mean() > 0.98 * np.log(5)


def test_the_loaded_encoder_shares_the_checkpoints_weights_and_no_run_changes_them(bundled):
    """No second copy of the weights (90 MB for the bundled model): every parameter of the from-scratch encoder
    lies in the transformers model's memory; and running every variant leaves those weights as loaded."""
    checkpoint = {parameter.data_ptr() for parameter in bundled.model.parameters()}
    assert all(parameter.data_ptr() in checkpoint for parameter in bundled.encoder.parameters())
    before = [parameter.detach().clone() for parameter in bundled.model.parameters()]
    for variant in Variant:
        extract(bundled, "The cat sat on the mat.", source="scratch", variant=variant.value, seed=1)
    extract(bundled, "The cat sat on the mat.")
    assert all(torch.equal(a, b) for a, b in zip(before, bundled.model.parameters(), strict=True))
