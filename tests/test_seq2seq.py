"""Encoder–decoders (T5, BART) and generated tokens, from tiny random checkpoints built offline.

The from-scratch twin must give transformers' eager ``encoder_attentions``, ``decoder_attentions`` and
``cross_attentions`` at every layer and head (``assert_close`` to 1e-6; it runs the same kernels in the same
order, so the same bits). Beside parity: cross-attention rows are distributions over the source, decoder
self-attention is causal, T5's buckets are transformers' own, generated tokens' maps are a forward of the whole
generated sequence, and an encoder–decoder given to the encoder/decoder loader gets a clear message.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_families import DECODERS
from tiny_seq2seq import SEQ2SEQ, T5_BUCKETS, T5_MAX_DISTANCE, make_tiny_causal_lm, make_tiny_seq2seq

from attention_viz.extraction import InputError, encode, extract, model_inputs
from attention_viz.extraction.generation import GenerationError, generate_decoder, load_generator
from attention_viz.extraction.seq2seq import (
    Seq2SeqResult,
    encode_source,
    encode_target,
    extract_seq2seq,
    generate_seq2seq,
)
from attention_viz.models.loading import ModelLoadError, load_model, load_seq2seq
from attention_viz.models.seq2seq import Seq2SeqTransformer, relative_position_bucket

SOURCE = "The animal didn't cross the street because it was too tired. Where is it? It is in the box."
TARGET = "The cat sat on the mat."
KINDS = ("encoder_attentions", "decoder_attentions", "cross_attentions")


@pytest.fixture(scope="module")
def seq2seq(tmp_path_factory):
    """``seq2seq(family)``: a tiny T5 (``t5``, ``t5-gated``) or BART checkpoint through load_seq2seq, built once."""
    loaded = {}

    def model(family: str):
        if family not in loaded:
            folder = tmp_path_factory.mktemp(f"tiny-{family}")
            options = {"feed_forward": "gated-gelu"} if family == "t5-gated" else {}
            loaded[family] = load_seq2seq(make_tiny_seq2seq(family.split("-")[0], folder, **options))
        return loaded[family]

    return model


def _transformers(loaded, source: np.ndarray, target: np.ndarray):
    with torch.inference_mode():
        return loaded.model(
            input_ids=torch.tensor(source)[None],
            decoder_input_ids=torch.tensor(target)[None],
            output_attentions=True,
            use_cache=False,
        )


def _assert_parity(loaded, source: np.ndarray, target: np.ndarray) -> float:
    """The twin == transformers for every layer and head of all three kinds (1e-6); the largest difference."""
    theirs = _transformers(loaded, source, target)
    with torch.inference_mode():
        ours = loaded.twin(torch.tensor(source)[None], torch.tensor(target)[None])
    worst = 0.0
    for kind in KINDS:
        a, b = getattr(ours, kind), getattr(theirs, kind)
        layers = loaded.info.encoder_layers if kind == "encoder_attentions" else loaded.info.decoder_layers
        assert len(a) == len(b) == layers, kind
        for layer, (x, y) in enumerate(zip(a, b, strict=True)):
            assert x.shape == y.shape, (kind, layer)
            torch.testing.assert_close(x, y, atol=1e-6, rtol=0, msg=lambda m, k=kind, i=layer: f"{k} {i}: {m}")
            worst = max(worst, float((x - y).abs().max()))
    return worst


@pytest.mark.parametrize("family", ["t5", "t5-gated", "bart"])
def test_twin_equals_transformers_for_encoder_decoder_and_cross_attention(seq2seq, family):
    loaded = seq2seq(family)
    info = loaded.info
    assert isinstance(loaded.twin, Seq2SeqTransformer) and not loaded.twin.training
    assert loaded.model.config._attn_implementation == "eager"
    assert (info.family, info.encoder_layers, info.decoder_layers) == (family.split("-")[0], 2, 3)
    assert (info.encoder_heads, info.decoder_heads) == ((4, 2) if family == "bart" else (4, 4))
    result = extract_seq2seq(loaded, SOURCE, TARGET)
    s, t = result.source.num_tokens, result.target.num_tokens
    if family != "bart":
        assert s > 2 * T5_MAX_DISTANCE  # far enough to reach T5's logarithmic and last buckets
    assert result.encoder.shape == (2, info.encoder_heads, s, s)
    assert result.decoder.shape == (3, info.decoder_heads, t, t)
    assert result.cross.shape == (3, info.decoder_heads, t, s)
    assert _assert_parity(loaded, result.source.input_ids, result.target.input_ids) == 0.0  # bit for bit
    pretrained = extract_seq2seq(loaded, SOURCE, TARGET, "pretrained")
    for kind in ("encoder", "decoder", "cross"):
        assert np.array_equal(result.maps(kind), pretrained.maps(kind)), kind
        assert result.maps(kind).std(axis=(-2, -1)).min() > 0.02  # heads with structure: a wrong bias shows


@pytest.mark.parametrize("family", SEQ2SEQ)
def test_cross_rows_sum_to_one_over_the_source_and_decoder_is_causal(seq2seq, family):
    result = extract_seq2seq(seq2seq(family), SOURCE, TARGET)
    np.testing.assert_allclose(result.cross.sum(-1), 1.0, atol=1e-6)  # each target token over the source
    np.testing.assert_allclose(result.encoder.sum(-1), 1.0, atol=1e-6)
    t, s = result.target.num_tokens, result.source.num_tokens
    assert np.all(result.decoder[..., np.triu(np.ones((t, t), bool), k=1)] == 0)  # exactly: no later target token
    np.testing.assert_allclose(result.decoder.sum(-1), 1.0, atol=1e-6)
    assert np.all(result.decoder[:, :, 0, 0] == 1.0)  # the start token sees only itself
    later = (result.encoder * np.triu(np.ones((s, s)), k=1)).sum(-1)  # (L, h, s): weight on later source tokens
    assert later[:, :, :-1].mean() > 0.1  # the encoder is bidirectional


@pytest.mark.parametrize("family", SEQ2SEQ)
def test_the_decoder_reads_the_start_token_then_the_target_without_its_end(seq2seq, family):
    loaded = seq2seq(family)
    target = encode_target(loaded, TARGET)
    labels = encode(loaded.tokenizer, TARGET, None, 64, None, 0)
    start = {"t5": "<pad>", "bart": "</s>"}[family]
    assert target.tokens == (start, *labels.tokens[:-1]) and labels.tokens[-1] == "</s>"
    assert target.input_ids[0] == loaded.info.decoder_start_token_id
    assert target.labels[1:] == labels.labels[:-1]
    source = encode_source(loaded, TARGET)
    assert source.tokens == labels.tokens  # the source keeps its end token
    with pytest.raises(InputError) as caught:
        extract_seq2seq(loaded, SOURCE, "  ")
    assert caught.value.code == "empty_target"
    with pytest.raises(InputError, match="unknown source"):
        extract_seq2seq(loaded, SOURCE, TARGET, "twin")


def test_t5_buckets_equal_transformers_in_both_directions():
    from transformers.models.t5.modeling_t5 import T5Attention

    relative = torch.arange(-300, 301)[None, :] - torch.arange(0, 40)[:, None]  # (40, 601): key - query
    for bidirectional in (True, False):
        for buckets, distance in ((32, 128), (T5_BUCKETS, T5_MAX_DISTANCE), (6, 10)):
            ours = relative_position_bucket(relative, bidirectional, buckets, distance)
            theirs = T5Attention._relative_position_bucket(relative, bidirectional, buckets, distance)
            assert torch.equal(ours, theirs), (bidirectional, buckets, distance)
            assert int(ours.min()) == 0 and int(ours.max()) == buckets - 1  # every bucket in range, the last reached
    causal = relative_position_bucket(torch.tensor([3, 1, 0, -1, -7, -500]), False, 32, 128)
    assert causal.tolist() == [0, 0, 0, 1, 7, 31]  # later keys share the query's bucket; far ones the last
    both = relative_position_bucket(torch.tensor([-1, 0, 1, 2]), True, 32, 128)
    assert both.tolist() == [1, 0, 17, 18]  # keys after the query in the upper half


def test_bart_positions_start_two_rows_in_and_its_scores_are_scaled(seq2seq):
    loaded = seq2seq("bart")
    twin, config = loaded.twin, loaded.twin.config
    assert torch.equal(twin.encoder_positions.weight, loaded.model.model.encoder.embed_positions.weight)
    assert twin.encoder_positions.weight.shape[0] == config.max_positions + 2
    assert twin.encoder_layers[0].self_attention.scaling == 8**-0.5  # 32 / 4 heads
    assert twin.decoder_layers[0].self_attention.scaling == 16**-0.5  # 32 / 2 heads
    ids = torch.tensor(encode_source(loaded, TARGET).input_ids)[None]
    shifted = twin.embeddings(ids) * config.embedding_scale + twin.encoder_positions.weight[2 : 2 + ids.shape[1]]
    assert torch.equal(twin.embed(ids, decoder=False), twin.encoder_embedding_norm(shifted))
    with pytest.raises(ValueError, match="more than the 64 positions"):
        twin.embed(torch.zeros(1, 65, dtype=torch.long), decoder=False)


def test_t5_scores_are_unscaled_and_its_bias_is_the_first_layers_shared(seq2seq):
    twin = seq2seq("t5").twin
    assert all(layer.self_attention.scaling == 1.0 for layer in (*twin.encoder_layers, *twin.decoder_layers))
    theirs = seq2seq("t5").model.encoder.block
    assert torch.equal(
        twin.encoder_position_bias.weight, theirs[0].layer[0].SelfAttention.relative_attention_bias.weight
    )
    assert not any(block.layer[0].SelfAttention.has_relative_attention_bias for block in theirs[1:])


@pytest.mark.parametrize("family", SEQ2SEQ)
def test_generated_target_maps_equal_a_forward_of_the_whole_generated_target(seq2seq, family):
    loaded = seq2seq(family)
    result = generate_seq2seq(loaded, SOURCE, max_new_tokens=6)
    assert isinstance(result, Seq2SeqResult)
    t = result.target.num_tokens
    assert t == 7 and result.generated.tolist() == [False] + [True] * 6  # the start token, then 6 written
    assert result.target.input_ids[0] == loaded.info.decoder_start_token_id
    with torch.inference_mode():  # the ids are greedy: each is the argmax after the ones before it
        logits = loaded.model(
            input_ids=torch.tensor(result.source.input_ids)[None],
            decoder_input_ids=torch.tensor(result.target.input_ids)[None],
            use_cache=False,
        ).logits[0]
    chosen = logits[:-1].argmax(-1).tolist()
    forced = 1 if family == "bart" else 0  # BART's first written token is its forced <s>
    assert result.target.tokens[1] == "<s>" or family == "t5"
    assert result.target.input_ids[1 + forced :].tolist() == chosen[forced:]
    _assert_parity(loaded, result.source.input_ids, result.target.input_ids)
    theirs = _transformers(loaded, result.source.input_ids, result.target.input_ids)
    assert np.array_equal(result.decoder, torch.cat(theirs.decoder_attentions).numpy())
    assert np.array_equal(result.cross, torch.cat(theirs.cross_attentions).numpy())
    # the last generation step read every token but the last one written: its maps are the first t - 1 rows
    last_step = _transformers(loaded, result.source.input_ids, result.target.input_ids[:-1])
    for layer in range(3):
        assert np.array_equal(result.cross[layer, :, :-1], last_step.cross_attentions[layer][0].numpy())
        assert np.array_equal(result.decoder[layer, :, :-1, :-1], last_step.decoder_attentions[layer][0].numpy())
    assert result.target.labels[0] == result.target.tokens[0]  # the start token as the model names it
    for token_id, label in zip(result.target.input_ids[1:], result.target.labels[1:], strict=True):
        decoded = loaded.tokenizer.decode([int(token_id)])  # written tokens read as they decode, no marker
        assert (
            label.removeprefix("##") == decoded.strip()
            or label.removeprefix("##").startswith("byte 0x")
            or label == "␣"
        ), label


def test_a_bart_saved_without_its_lm_head_gives_maps_but_refuses_to_generate(tmp_path):
    from transformers import BartModel

    folder = make_tiny_seq2seq("bart", tmp_path / "full", tie=False)  # a head of its own
    BartModel.from_pretrained(folder).save_pretrained(tmp_path / "bare")  # the bare model: no lm_head saved
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / "bare" / name).write_bytes((tmp_path / "full" / name).read_bytes())
    loaded = load_seq2seq(str(tmp_path / "bare"))
    assert not loaded.info.can_generate and load_seq2seq(folder).info.can_generate
    assert extract_seq2seq(loaded, SOURCE, TARGET).cross.shape[0] == 3
    with pytest.raises(GenerationError, match="saved without its language-model head"):
        generate_seq2seq(loaded, SOURCE)


@pytest.mark.parametrize("family", ["gpt2", *DECODERS])
def test_decoder_generation_maps_equal_a_forward_of_the_whole_sequence(tmp_path, family):
    loaded = load_model(make_tiny_causal_lm(family, tmp_path))
    generator = load_generator(loaded.info)
    prompt = "The cat sat on the"
    out = generate_decoder(loaded, prompt, max_new_tokens=5, generator=generator)
    prompt_tokens = encode(loaded.tokenizer, prompt, None, 64, None, 0).num_tokens
    n = out.result.encoding.num_tokens
    assert out.num_prompt_tokens == prompt_tokens and prompt_tokens < n <= prompt_tokens + 5
    assert out.generated.tolist() == [False] * prompt_tokens + [True] * (n - prompt_tokens)
    ids = torch.tensor(out.result.encoding.input_ids)[None]
    with torch.inference_mode():
        prompt_ids = ids[:, :prompt_tokens]  # the attention mask given: a <s> of id 0 is no padding
        expected = generator.generate(
            prompt_ids, attention_mask=torch.ones_like(prompt_ids), do_sample=False, max_new_tokens=5
        )
        theirs = torch.cat(loaded.model(input_ids=ids, use_cache=False, output_attentions=True).attentions)
        last_step = torch.cat(loaded.model(input_ids=ids[:, :-1], use_cache=False, output_attentions=True).attentions)
    assert torch.equal(ids, expected[:, :n])  # the ids are transformers' greedy ones
    assert out.result.source == "scratch" and out.result.weights.shape == (2, 4, n, n)
    torch.testing.assert_close(torch.from_numpy(out.result.weights), theirs, atol=1e-6, rtol=0)
    assert np.all(out.result.weights[..., np.triu(np.ones((n, n), bool), k=1)] == 0)
    # the last step read every token but the last one written: its maps are the first n - 1 rows and columns
    torch.testing.assert_close(torch.from_numpy(out.result.weights[:, :, :-1, :-1]), last_step, atol=1e-6, rtol=0)
    assert isinstance(out.result, type(extract(loaded, "x")))  # the result type the pages draw
    assert model_inputs(out.result.encoding)["input_ids"].shape == (1, n)


def test_a_bare_decoder_without_its_lm_head_cannot_generate(tmp_path):
    from tiny_families import make_tiny

    loaded = load_model(make_tiny("llama", tmp_path))  # LlamaModel, untied: no lm_head saved
    with pytest.raises(GenerationError, match="saved without its language-model head"):
        generate_decoder(loaded, "The cat")
    with pytest.raises(InputError) as caught:
        generate_decoder(loaded, "The cat", max_new_tokens=0)
    assert caught.value.code == "invalid"


def test_an_encoder_decoder_given_to_the_encoder_loader_gets_a_clear_message(tmp_path):
    folder = make_tiny_seq2seq("t5", tmp_path)
    with pytest.raises(ModelLoadError, match="is an encoder–decoder \\('t5'\\) model") as caught:
        load_model(folder)
    assert caught.value.code == "encoder_decoder" and caught.value.fields["model_type"] == "t5"
    with pytest.raises(ModelLoadError) as refused:  # and a BERT given to the encoder–decoder loader
        from conftest import make_tiny_bert

        load_seq2seq(make_tiny_bert(tmp_path / "bert", hidden_size=32, num_hidden_layers=1, num_attention_heads=4))
    assert refused.value.code == "not_bert" and refused.value.fields["families"] == "t5, bart"


def test_labels_of_each_kind_mark_the_written_target_tokens(seq2seq):
    from attention_viz.extraction.seq2seq import WRITTEN

    result = generate_seq2seq(seq2seq("bart"), SOURCE, max_new_tokens=3)
    source, target = result.source.labels, result.target.labels
    marked = (target[0], *(WRITTEN + label for label in target[1:]))  # the start token read, then 3 written
    assert result.labels("encoder") == (tuple(source), tuple(source))
    assert result.labels("decoder") == (marked, marked)
    assert result.labels("cross") == (marked, tuple(source))  # target queries (rows) over source keys
    typed = extract_seq2seq(seq2seq("bart"), SOURCE, TARGET, "pretrained")
    assert typed.labels("decoder")[0] == tuple(typed.target.labels)  # a given target: nothing marked
    with pytest.raises(ValueError, match="unknown attention kind"):
        result.labels("self")


def test_kind_statistics_read_each_kind_as_its_own_tokens(seq2seq):
    from attention_viz.analysis import stats

    loaded = seq2seq("bart")
    result = extract_seq2seq(loaded, SOURCE, TARGET, "pretrained")
    cross = stats.kind_statistics(result, "cross", "<s>", "</s>")
    end = np.array([token == "</s>" for token in result.source.tokens])
    expected = result.cross.astype(np.float64)[..., end].sum(-1).mean(-1).reshape(-1)
    np.testing.assert_allclose(cross["sep"], expected)  # the source's end token, averaged over target queries
    assert len(cross) == 3 * loaded.info.decoder_heads and "self" not in cross
    decoder = stats.kind_statistics(result, "decoder", "<s>", "</s>")
    assert decoder["next"].isna().all() and decoder["previous"].notna().all()  # causal: no next token
    assert not {"tags", "a_to_b", "b_to_a"} & set(decoder.columns)
    kinds = stats.TokenKinds.from_encoding(result.source, "<s>", "</s>")
    encoder = stats.kind_statistics(result, "encoder", "<s>", "</s>")
    np.testing.assert_array_equal(encoder["entropy"], stats.head_statistics(result.encoder, kinds)["entropy"])
