"""Knocking out a key: the rows renormalise in the layer where it goes, nothing below changes, and our encoder
equals transformers given the same mask (a 2-D attention mask for every head; a per-head 4-D mask handed to
transformers' own attention modules)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_families import FAMILIES

from attention_viz.analysis import knockout
from attention_viz.extraction import encode
from attention_viz.models import families

TEXT = "The keys to the old cabinet are on the table."


def _encoding(loaded, text: str = TEXT):
    return encode(loaded.tokenizer, text, None, loaded.info.max_positions, None, loaded.encoder.config.type_vocab_size)


def test_key_mask_scopes():
    assert knockout.key_mask(3, 2, 5, 4, "all").sum() == 6
    layer = knockout.key_mask(3, 2, 5, 4, "layer", layer=1)
    assert layer[1, :, 4].all() and layer.sum() == 2
    head = knockout.key_mask(3, 2, 5, 1, "head", layer=2, head=1)
    assert head[2, 1, 1] and head.sum() == 1
    with pytest.raises(ValueError, match="key 5 is out of range 0-4"):
        knockout.key_mask(3, 2, 5, 5, "all")
    with pytest.raises(ValueError, match="unknown scope"):
        knockout.key_mask(3, 2, 5, 0, "everything")


def test_one_head_renormalises_its_rows_and_nothing_below_changes(bundled):
    encoding = _encoding(bundled)
    key, layer, head = 3, 2, 5
    result = knockout.knock_out_key(bundled.encoder, encoding, key, "head", layer, head)
    np.testing.assert_array_equal(result.after[:layer], result.before[:layer])
    others = [h for h in range(bundled.info.num_heads) if h != head]
    np.testing.assert_array_equal(result.after[layer, others], result.before[layer, others])
    row = result.before[layer, head].astype(np.float64)
    expected = row.copy()
    expected[:, key] = 0.0
    expected /= 1.0 - row[:, key : key + 1]
    np.testing.assert_allclose(result.after[layer, head], expected, atol=1e-6)
    assert (result.after[layer, head, :, key] == 0).all()
    assert result.change[layer + 1 :].max() > 1e-4 and result.change[:layer].max() == 0
    assert 0 < result.embedding_distance < 1 and result.first_changed_layer() == layer


def test_a_decoder_cannot_lose_its_first_key(family_model):
    gpt2 = family_model("gpt2")
    with pytest.raises(ValueError, match="first token"):
        knockout.knock_out_key(gpt2.encoder, _encoding(gpt2, "The cat sat."), 0)


def _transformers(loaded, encoding, attention_mask: torch.Tensor):
    family = families.family_for(loaded.info.family)
    ids = torch.tensor(encoding.input_ids)[None]
    inputs = {"input_ids": ids, "token_type_ids": torch.tensor(encoding.token_type_ids)[None]}
    inputs["attention_mask"] = attention_mask
    with torch.inference_mode():
        out = loaded.model(**family.model_kwargs(inputs), output_attentions=True)
    return torch.stack(out.attentions)[:, 0].numpy(), out.last_hidden_state[0]


def _ours(loaded, encoding, mask: np.ndarray):
    ids = torch.tensor(encoding.input_ids)[None]
    with torch.inference_mode():
        out = loaded.encoder(ids, torch.tensor(encoding.token_type_ids)[None], key_mask=torch.from_numpy(mask))
    return torch.stack(out.attentions)[:, 0].numpy(), out.last_hidden_state[0]


def _check_every_head_against_transformers(loaded, key: int) -> None:
    encoding = _encoding(loaded)
    result = knockout.knock_out_key(loaded.encoder, encoding, key, "all")
    keep = torch.ones(1, encoding.num_tokens, dtype=torch.int64)
    keep[0, key] = 0
    theirs, their_hidden = _transformers(loaded, encoding, keep)
    np.testing.assert_allclose(result.after, theirs, atol=1e-6, rtol=0)
    _, our_hidden = _ours(loaded, encoding, result.mask)
    torch.testing.assert_close(our_hidden, their_hidden, atol=1e-6, rtol=0)
    assert np.abs(result.after - result.before).max() > 1e-3  # the knock-out did something


def test_every_head_equals_transformers_attention_mask_on_the_bundled_model(bundled):
    _check_every_head_against_transformers(bundled, 4)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_head_equals_transformers_attention_mask_for_every_family(family, family_model):
    _check_every_head_against_transformers(family_model(family), 2)


def _per_head_mask_hooks(loaded, mask: np.ndarray, causal: bool):
    """Forward pre-hooks that hand each transformers attention module its layer's 4-D additive mask."""
    modules = families.family_for(loaded.info.family).attention_modules(loaded.model)
    t = mask.shape[-1]
    handles = []
    for index, module in enumerate(modules):
        blocked = torch.from_numpy(mask[index])[None, :, None, :]  # (1, h, 1, s)
        if causal:
            blocked = blocked | ~torch.ones(t, t, dtype=torch.bool).tril()[None, None]  # (1, h, t, s)
        additive = torch.zeros(blocked.shape).masked_fill(blocked, torch.finfo(torch.float32).min)

        def hook(module, args, kwargs, additive=additive):
            return args, kwargs | {"attention_mask": additive}

        handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
    return handles


@pytest.mark.parametrize(("family", "scope"), [("bert", "head"), ("bert", "layer"), ("gpt2", "head")])
def test_one_head_or_layer_equals_transformers_given_the_same_mask(family, scope, bundled, family_model):
    loaded = bundled if family == "bert" else family_model(family)
    encoding = _encoding(loaded)
    result = knockout.knock_out_key(loaded.encoder, encoding, 3, scope, layer=1, head=2)
    handles = _per_head_mask_hooks(loaded, result.mask, loaded.info.causal)
    try:
        theirs, their_hidden = _transformers(loaded, encoding, torch.ones(1, encoding.num_tokens, dtype=torch.int64))
    finally:
        for handle in handles:
            handle.remove()
    np.testing.assert_allclose(result.after, theirs, atol=1e-6, rtol=0)
    _, our_hidden = _ours(loaded, encoding, result.mask)
    torch.testing.assert_close(our_hidden, their_hidden, atol=1e-6, rtol=0)
