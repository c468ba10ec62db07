"""Every supported family, from a tiny random checkpoint: loading, parity with transformers, tokens, rules.

Parity is bit for bit (``torch.equal``) at every layer and head: the from-scratch encoder runs the same
kernels in the same order as transformers' eager attention, for single texts, pairs and padded batches.
"""

import numpy as np
import pytest
import torch
from tiny_families import DECODERS, FAMILIES, transformers_attentions, twin_attentions

from attention_viz.extraction import InputError, encode, extract, model_inputs, pretrained_attention
from attention_viz.models import families
from attention_viz.models.encoder import BertEncoder, Variant, WeightMismatchError

TEXT = "The animal didn't cross the street because it was too tired."
PAIR = ("Where is it?", "It is in the box.")
SPECIALS = {  # (first token, last token) of a single text, as each family's tokenizer names them
    "albert": ("[CLS]", "[SEP]"),
    "bert": ("[CLS]", "[SEP]"),
    "distilbert": ("[CLS]", "[SEP]"),
    "electra": ("[CLS]", "[SEP]"),
    "roberta": ("<s>", "</s>"),
    "xlm-roberta": ("<s>", "</s>"),
}
MARKERS = ("Ġ", "Ċ", "▁", "Â", "Ã")  # byte-level BPE and SentencePiece markers, byte pieces of é/ï


def test_families_are_found_by_model_type():
    assert families.supported() == tuple(sorted(FAMILIES + DECODERS))  # by module name, xlm_roberta last
    with pytest.raises(families.UnsupportedFamilyError, match="'t5' models are not supported; supported families: al"):
        families.family_for("t5")


@pytest.mark.parametrize("family", FAMILIES)
def test_loads_with_its_family(family_model, family):
    loaded = family_model(family)
    info = loaded.info
    assert (info.family, info.causal) == (family, family == "gpt2")
    assert info.family_name == families.family_for(family).name
    assert info.num_heads == 4 and info.hidden_size == 32 and info.head_dim == 8
    assert not loaded.model.training and not loaded.encoder.training
    assert loaded.model.config._attn_implementation == "eager"


@pytest.mark.parametrize("family", FAMILIES)
def test_scratch_attention_is_transformers_bit_for_bit(family_model, family):
    loaded = family_model(family)
    inputs = [(TEXT, None)] + ([] if family == "gpt2" else [PAIR])
    for text, pair in inputs:
        encoding = encode(loaded.tokenizer, text, pair, loaded.info.max_positions)
        expected, ours = transformers_attentions(loaded, encoding), twin_attentions(loaded, encoding)
        assert len(expected) == len(ours) == loaded.info.num_layers
        assert [torch.equal(a, b) for a, b in zip(ours, expected, strict=True)] == [True] * len(ours), (text, pair)
        assert min(float(a.std()) for a in ours) > 0.05  # heads with structure: a wrong position or mask shows


@pytest.mark.parametrize("family", FAMILIES)
def test_padded_batch_is_transformers_bit_for_bit(family_model, family):
    """The corpus runs padded batches: padding (RoBERTa's positions, GPT-2's causal mask) changes nothing."""
    from attention_viz.extraction.batch import encode_batch

    loaded = family_model(family)
    types = loaded.encoder.config.type_vocab_size
    inputs, rows = encode_batch(loaded.tokenizer, [(TEXT, None), ("Short.", None), PAIR], 60, types)
    assert (inputs["attention_mask"] == 0).any()
    kwargs = families.family_for(family).model_kwargs(inputs)
    with torch.inference_mode():
        expected = loaded.model(**kwargs, output_attentions=True).attentions
        ours = loaded.encoder(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"]).attentions
    for row, (ids, _, _) in enumerate(rows):
        n = len(ids)
        for a, b in zip(ours, expected, strict=True):
            assert torch.equal(a[row, :, :n, :n], b[row, :, :n, :n]), (family, row)


@pytest.mark.parametrize("family", FAMILIES)
def test_hooks_take_the_reference_weights_bit_for_bit(family_model, family):
    """The fast path (forward hooks, the forward stopped after the last attention) against the reference
    (``output_attentions=True``), for a text and, where the family reads one, a pair."""
    from attention_viz.extraction import reference_attention

    loaded = family_model(family)
    modules = families.family_for(family).attention_modules(loaded.model)
    assert len(modules) == loaded.info.num_layers and all(module is not None for module in modules)
    reference_attention(loaded.model, encode(loaded.tokenizer, TEXT))  # transformers adds its own hooks once
    hooks = [len(module._forward_hooks) for module in loaded.model.modules()]
    for text, pair in [(TEXT, None)] + ([] if family == "gpt2" else [PAIR]):
        encoding = encode(loaded.tokenizer, text, pair, loaded.info.max_positions)
        hooked = pretrained_attention(loaded.model, encoding)
        assert np.array_equal(hooked, torch.cat(transformers_attentions(loaded, encoding)).numpy())
        assert np.array_equal(hooked, reference_attention(loaded.model, encoding)), (family, pair)
    assert [len(module._forward_hooks) for module in loaded.model.modules()] == hooks


@pytest.mark.parametrize("family", FAMILIES)
def test_every_variant_runs_and_keeps_the_mask(family_model, family):
    loaded = family_model(family)
    for variant in Variant:
        result = extract(loaded, TEXT, source="scratch", variant=variant, seed=3)
        np.testing.assert_allclose(result.weights.sum(-1), 1, atol=1e-5)
        upper = result.weights[..., np.triu_indices(result.encoding.num_tokens, k=1)[0], :]
        if family == "gpt2":  # the causal mask is kept whatever the scaling or the weights
            t = result.encoding.num_tokens
            assert np.all(result.weights[..., np.triu(np.ones((t, t), bool), k=1)] == 0), variant
        else:
            assert upper.max() > 0
    scaled = extract(loaded, TEXT, source="scratch", variant="no-scaling").weights
    assert not np.allclose(scaled, extract(loaded, TEXT, source="scratch").weights)


def test_gpt2_upper_triangle_is_exactly_zero_and_its_first_token_sees_itself(family_model):
    loaded = family_model("gpt2")
    result = extract(loaded, TEXT)
    t = result.encoding.num_tokens
    assert np.all(result.weights[..., np.triu(np.ones((t, t), bool), k=1)] == 0)
    assert np.all(result.weights[..., 0, 0] == 1)
    assert not result.encoding.special.any() and result.encoding.tokens[0] == "The"


def test_gpt2_refuses_a_pair_with_a_clear_message(family_model):
    loaded = family_model("gpt2")
    with pytest.raises(InputError, match="reads one text, not a sentence pair") as refused:
        extract(loaded, *PAIR)
    assert refused.value.code == "pair_unsupported"
    assert not extract(loaded, PAIR[0], "   ").encoding.is_pair  # a blank second sentence is no pair


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "gpt2"])
def test_specials_and_pair_template_are_the_familys_own(family_model, family):
    loaded = family_model(family)
    single, pair = encode(loaded.tokenizer, TEXT), encode(loaded.tokenizer, *PAIR)
    first, last = SPECIALS[family]
    assert (single.tokens[0], single.tokens[-1]) == (first, last) == (single.labels[0], single.labels[-1])
    specials = [token for token, special in zip(pair.tokens, pair.special, strict=True) if special]
    middle = [last, last] if family in ("roberta", "xlm-roberta") else [last]  # RoBERTa's </s></s>
    assert specials == [first, *middle, last]
    assert pair.is_pair and pair.segments[-1] == 1
    assert pair.token_type_ids.any() == (family in ("bert", "distilbert", "electra", "albert"))


@pytest.mark.parametrize("family", FAMILIES)
def test_labels_carry_no_tokenizer_marker_and_words_read_as_typed(family_model, family):
    loaded = family_model(family)
    text = "Naïve café; GPU's  tokenizer\nsplit it."
    encoding = encode(loaded.tokenizer, text)
    words = [label for label, special in zip(encoding.labels, encoding.special, strict=True) if not special]
    assert not any(marker in label for label in words for marker in MARKERS), encoding.labels
    assert "".join(encoding.words) == "".join(text.split())  # every typed character once, in order
    previous = None
    for label, word in zip(encoding.labels, encoding.word_ids, strict=True):
        if label.startswith("##"):  # a piece that continues the word of the piece before it
            assert word >= 0 and word == previous and label[2:]
        previous = word if label not in ("␣", "⏎") else previous
    if family in ("roberta", "gpt2"):  # byte-level BPE has tokens for the double space and the line break
        assert "⏎" in encoding.labels and "␣" in encoding.labels


def test_byte_pieces_of_one_character_make_one_word(family_model):
    from attention_viz.analysis import ViewOptions, apply_view

    loaded = family_model("roberta")
    encoding = encode(loaded.tokenizer, "a 你好 b")
    pieces = [i for i, label in enumerate(encoding.labels) if label.removeprefix("##") in ("你", "好")]
    assert len(pieces) > 2  # the premise: byte-level BPE splits each character into byte pieces
    view = apply_view(np.eye(encoding.num_tokens), encoding, ViewOptions(word_level=True))
    assert "你好" in view.query_labels and not any("你你" in label for label in view.query_labels)


def test_roberta_positions_start_after_the_padding_index(family_model):
    loaded = family_model("roberta")
    pad = loaded.tokenizer.pad_token_id
    assert loaded.info.max_positions == loaded.model.config.max_position_embeddings - pad - 1
    ids = torch.tensor([[0, 5, 6, 2, pad]])
    assert loaded.encoder.embeddings.positions(ids).tolist() == [[pad + 1, pad + 2, pad + 3, pad + 4, pad]]
    result = extract(loaded, "word " * 200)  # longer than the table: cut to what it holds, and runs
    assert result.encoding.truncated and result.encoding.num_tokens == loaded.info.max_positions


def test_albert_layers_share_one_set_of_weights(family_model):
    loaded = family_model("albert")
    layers = loaded.encoder.layers
    assert len(layers) == 3 and layers[0] is layers[1] is layers[2]
    assert loaded.info.layer_weight_sets == 1
    weights = extract(loaded, TEXT).weights
    assert not np.allclose(weights[0], weights[1])  # same weights, different inputs: different attention
    random = BertEncoder.random(loaded.encoder.config, 0)
    assert random.layers[0] is random.layers[2]


def test_distilbert_and_gpt2_are_given_no_token_types(family_model):
    for family in ("distilbert", "gpt2"):
        loaded = family_model(family)
        assert not hasattr(loaded.encoder.embeddings, "token_type_embeddings")
        kwargs = families.family_for(family).model_kwargs(model_inputs(encode(loaded.tokenizer, TEXT)))
        assert "token_type_ids" not in kwargs


def test_electra_and_albert_project_their_embeddings(family_model):
    for family in ("electra", "albert"):
        encoder = family_model(family).encoder
        assert encoder.embeddings.word_embeddings.weight.shape[1] == 16
        assert tuple(encoder.embeddings.projection.weight.shape) == (32, 16)


def test_a_checkpoint_missing_a_weight_is_refused(family_model):
    from attention_viz.models.encoder import load_weights

    loaded = family_model("gpt2")
    family = families.family_for("gpt2")
    state = {k: v for k, v in loaded.model.state_dict().items() if k != "h.1.attn.c_proj.weight"}
    fresh = BertEncoder(loaded.encoder.config)
    names = lambda name: family.checkpoint_name(name, loaded.encoder.config)  # noqa: E731
    with pytest.raises(WeightMismatchError, match=r"no 'h\.1\.attn\.c_proj\.weight'"):
        load_weights(fresh, state, names, family.unused, family.transposed)


@pytest.mark.parametrize(
    ("family", "setting", "message"),
    [
        ("albert", {"inner_group_num": 2}, "inner_group_num 2"),
        ("gpt2", {"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
        ("roberta", {"is_decoder": True}, "configured as decoders"),
    ],
)
def test_settings_the_encoder_lacks_are_refused(family_model, family, setting, message):
    config = family_model(family).model.config.__class__(**family_model(family).model.config.to_dict() | setting)
    with pytest.raises(WeightMismatchError, match=message):
        families.family_for(family).encoder_config(config)


def test_catalog_lists_cached_models_and_root_folders_by_family(tmp_path, family_dir):
    import shutil

    from attention_viz import settings
    from attention_viz.models import catalog

    cache = tmp_path / "hub"
    for family, repo in [("roberta", "models--FacebookAI--roberta-base"), ("gpt2", "models--gpt2")]:
        shutil.copytree(family_dir(family), cache / repo / "snapshots" / "abc123")
        (cache / repo / "refs").mkdir()
        (cache / repo / "refs" / "main").write_text("abc123")
    root = tmp_path / "models"
    shutil.copytree(family_dir("albert"), root / "org" / "tiny-albert")
    (root / "notes").mkdir()  # not a checkpoint
    shutil.copytree(family_dir("bert"), root / "pickled")
    (root / "pickled" / "model.safetensors").unlink()  # would not load: not offered
    found = catalog.find_models(settings.ModelPolicy(), str(cache))
    assert [(m.name, m.family_name, m.where) for m in found] == [
        ("FacebookAI/roberta-base", "RoBERTa", "cache"),
        ("gpt2", "GPT-2", "cache"),
    ]
    found = catalog.find_models(settings.ModelPolicy(allowed=("gpt2",), root=str(root)), str(cache))
    assert [(m.name, m.family) for m in found] == [("gpt2", "gpt2"), ("org/tiny-albert", "albert")]
    assert catalog.find_models(settings.ModelPolicy(), str(tmp_path / "no-cache")) == []


def test_special_tokens_that_look_like_html_are_drawn_literally(family_model):
    """Plotly reads text as a little HTML: an unescaped <s> strikes through and upsets the axis."""
    from attention_viz.figures import attention_heatmap, line_view

    encoding = encode(family_model("roberta").tokenizer, *PAIR)
    t = encoding.num_tokens
    figure = attention_heatmap(np.full((t, t), 1 / t), encoding.labels)
    y = list(figure.data[0].y)  # each label between bidi isolates (FSI ... PDI)
    assert y[0] == "\u2068&lt;s&gt;\u2069" and y[-1].startswith("\u2068&lt;/s&gt;") and not any("<" in s for s in y)
    lines = line_view(np.full((t, t), 1 / t), encoding.labels)
    assert not any("<" in str(text) for trace in lines.data for text in (trace.text or ()))


@pytest.mark.parametrize("family", ["roberta", "xlm-roberta", "albert"])
def test_hide_specials_and_blocks_know_the_familys_specials(family_model, family):
    from attention_viz.analysis import ViewOptions, apply_view

    loaded = family_model(family)
    result = extract(loaded, *PAIR)
    hidden = apply_view(result.weights[1, 0], result.encoding, ViewOptions(hide_special=True))
    first, last = SPECIALS[family]
    assert first not in hidden.query_labels and last not in hidden.query_labels
    assert len(hidden.query_labels) == result.encoding.num_tokens - int(result.encoding.special.sum())
    np.testing.assert_allclose(hidden.matrix.sum(-1), 1, atol=1e-6)
    block = apply_view(result.weights[1, 0], result.encoding, ViewOptions(block="BA"))
    segments = result.encoding.segments
    labels = result.encoding.labels
    assert block.query_labels == tuple(label for label, s in zip(labels, segments, strict=True) if s == 1)
    assert block.key_labels == tuple(label for label, s in zip(labels, segments, strict=True) if s == 0)
    assert block.key_labels[0] == first and block.query_labels[-1] == last  # B's rows, A's columns


@pytest.mark.parametrize("family", FAMILIES)
def test_each_head_switched_off_in_its_layer_is_the_layer_with_a_head_mask(family_model, family):
    """Head importance's shortcut (attention computed once per text) for every kind of layer: post- and
    pre-LayerNorm, three or one fused projection, bidirectional or causal."""
    encoder = family_model(family).encoder
    heads, g = encoder.config.num_attention_heads, 2
    x = torch.randn(g, 5, encoder.config.hidden_size, generator=torch.Generator().manual_seed(1))  # (g, n, hidden)
    off = 1 - torch.eye(heads).repeat_interleave(g, dim=0)  # (h * g, h)
    for layer in encoder.layers:
        with torch.inference_mode():
            expected, _ = layer(x.repeat(heads, 1, 1), None, None, off)
            found = layer.without_each_head(x)
        torch.testing.assert_close(found, expected, atol=1e-6, rtol=0)
