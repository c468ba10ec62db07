"""Predictions from a checkpoint's language-model head, on tiny checkpoints saved with one: equal to the
transformers LM model's own, with nothing changed, with a key removed and with a head switched off."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_families import DECODERS, _decoder_model, _model, _tokenizer
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

from attention_viz.analysis import knockout
from attention_viz.extraction import encode
from attention_viz.extraction.tokens import visible
from attention_viz.models import families
from attention_viz.models.lm_head import PieceText, byte_label, load_lm_head, piece_text, predict
from attention_viz.models.loading import load_model

ENCODER_LM = ("albert", "bert", "distilbert", "electra", "gpt2", "roberta", "xlm-roberta")
LM_FAMILIES = (*ENCODER_LM, *DECODERS)
GEMMA_LOGIT_CAP = 0.2  # low enough that the tiny model's logits (about ±0.3) bend under it
TEXT = "The cat sat on the mat."


def _save_lm(family: str, folder) -> str:
    tokenizer = _tokenizer(family)
    torch.manual_seed(0)
    if family in DECODERS:  # a ...ForCausalLM: Gemma 2 ties its head to the embeddings, the others save one
        cap = {"final_logit_softcapping": GEMMA_LOGIT_CAP} if family == "gemma2" else {}
        config = _decoder_model(family, len(tokenizer), **cap).config
    else:
        config = _model(family, len(tokenizer), tokenizer.pad_token_id).config
    auto = AutoModelForCausalLM if family == "gpt2" or family in DECODERS else AutoModelForMaskedLM
    model = auto.from_config(config)
    query_key = ("query.weight", "key.weight", "q_lin.weight", "k_lin.weight", "c_attn.weight", "q_proj.weight")
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith((*query_key, "k_proj.weight")):
                param.normal_(0.0, 0.5)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def lm_model(tmp_path_factory):
    loaded = {}

    def get(family: str):
        if family not in loaded:
            folder = _save_lm(family, tmp_path_factory.mktemp(f"lm-{family}"))
            model = load_model(folder)
            loaded[family] = (model, load_lm_head(model.info))
        return loaded[family]

    return get


def test_the_bundled_model_has_no_language_model_head(bundled):
    assert load_lm_head(bundled.info) is None


def _encoding(loaded):
    return encode(loaded.tokenizer, TEXT, None, loaded.info.max_positions, None, loaded.encoder.config.type_vocab_size)


def _theirs(loaded, head, encoding, attention_mask=None) -> torch.Tensor:
    family = families.family_for(loaded.info.family)
    ids = torch.tensor(encoding.input_ids)[None]
    mask = torch.ones_like(ids) if attention_mask is None else attention_mask
    inputs = {"input_ids": ids, "token_type_ids": torch.tensor(encoding.token_type_ids)[None], "attention_mask": mask}
    with torch.inference_mode():
        return torch.softmax(head.model(**family.model_kwargs(inputs)).logits[0].double(), -1)  # (t, vocab)


@pytest.mark.parametrize("family", LM_FAMILIES)
def test_predictions_equal_the_transformers_lm_model(family, lm_model):
    loaded, head = lm_model(family)
    assert head is not None and head.kind == ("causal" if family == "gpt2" or family in DECODERS else "masked")
    encoding = _encoding(loaded)
    position = 2
    theirs = _theirs(loaded, head, encoding)[position]
    found = predict(loaded.encoder, head, loaded.tokenizer, encoding, position, k=5)
    np.testing.assert_array_equal(found.ids, torch.topk(theirs, 5).indices.numpy())
    np.testing.assert_allclose(found.probabilities, theirs[found.ids].numpy(), atol=1e-6)
    # every head without key 1: transformers' attention mask 0 there
    keep = torch.ones(1, encoding.num_tokens, dtype=torch.int64)
    keep[0, 1] = 0
    mask = knockout.key_mask(loaded.info.num_layers, loaded.info.num_heads, encoding.num_tokens, 1, "all")
    knocked = predict(loaded.encoder, head, loaded.tokenizer, encoding, position, 5, key_mask=torch.from_numpy(mask))
    theirs = _theirs(loaded, head, encoding, keep)[position]
    np.testing.assert_allclose(knocked.probabilities, theirs[knocked.ids].numpy(), atol=1e-6)
    assert np.abs(knocked.probabilities - found.probabilities).max() > 0 or not np.array_equal(knocked.ids, found.ids)


def test_a_head_switched_off_equals_zeroing_its_context_in_transformers(lm_model):
    loaded, head = lm_model("bert")
    encoding = _encoding(loaded)
    layer, off = 1, 2
    head_mask = torch.ones(loaded.info.num_layers, loaded.info.num_heads)
    head_mask[layer, off] = 0
    ours = predict(loaded.encoder, head, loaded.tokenizer, encoding, 3, 5, head_mask=head_mask)
    d = loaded.info.head_dim
    module = families.family_for("bert").attention_modules(head.model)[layer]

    def zero_head(module, args, output):
        context = output[0].clone()
        context[..., off * d : (off + 1) * d] = 0
        return (context, *output[1:])

    handle = module.register_forward_hook(zero_head)
    try:
        theirs = _theirs(loaded, head, encoding)[3]
    finally:
        handle.remove()
    np.testing.assert_allclose(ours.probabilities, theirs[ours.ids].numpy(), atol=1e-6)


def test_a_position_out_of_range_is_refused(lm_model):
    loaded, head = lm_model("gpt2")
    with pytest.raises(ValueError, match="out of range"):
        predict(loaded.encoder, head, loaded.tokenizer, _encoding(loaded), 99)


# What a prediction reads as: the text its piece decodes to, "␣" before a piece that starts a word, bytes that
# are no whole character named. One table per tokenizer kind the project supports, on the tiny tokenizers.
PIECES = {
    "bert": {"the": "␣the", "##ja": "ja", "[MASK]": "[MASK]", "[SEP]": "[SEP]"},  # WordPiece
    "distilbert": {"the": "␣the", "##ja": "ja", "[MASK]": "[MASK]"},
    "electra": {"the": "␣the", "##ja": "ja", "[MASK]": "[MASK]"},
    "roberta": {  # byte-level BPE
        "Ġanim": "␣anim",
        "ĠcafÃ©": "␣café",
        "The": "The",
        "Ä": "byte 0xC4",  # the first byte of a two-byte character
        "¦": "byte 0xA6",  # a continuation byte
        "jÃ": "j + byte 0xC3",
        "Ġ": "␣",
        "Ċ": "⏎",
        "<mask>": "<mask>",
        "</s>": "</s>",
    },
    "gpt2": {"Ġanim": "␣anim", "ĠcafÃ©": "␣café", "Ä": "byte 0xC4", "¦": "byte 0xA6", "<|endoftext|>": "<|endoftext|>"},
    "xlm-roberta": {"▁d": "␣d", "he": "he", "é": "é", "▁": "␣", "<mask>": "<mask>"},  # SentencePiece
    "albert": {"▁d": "␣d", "he": "he", "▁": "␣", "[MASK]": "[MASK]"},
}


@pytest.mark.parametrize("family", ENCODER_LM)
def test_a_piece_reads_as_its_decoded_text_with_the_word_start_marked(family):
    tokenizer = _tokenizer(family)
    vocabulary = tokenizer.get_vocab()
    for piece, label in PIECES[family].items():
        found = piece_text(tokenizer, vocabulary[piece])
        assert (found.piece, found.label()) == (piece, label)
        assert found.special == (piece in tokenizer.all_special_tokens)
    # every other piece reads as transformers decodes it (control characters drawn), less the word's space
    wordpiece = family in ("bert", "distilbert", "electra")
    for piece, token_id in vocabulary.items():
        found = piece_text(tokenizer, token_id)
        decoded = visible(tokenizer.decode([token_id]))
        if found.special or any(isinstance(part, bytes) for part in found.parts) or not decoded.strip():
            continue
        text = "".join(found.parts)
        starts = not piece.startswith("##") if wordpiece else decoded.startswith(" ") or piece.startswith("▁")
        assert found.new_word == starts, (piece, found)
        written = {"##" + text} if wordpiece and not starts else {text, " " + text}  # SentencePiece drops the space
        assert decoded in written, (piece, decoded, found)


def test_bytes_that_are_no_whole_character_are_named():
    assert byte_label(b"\xc4") == "byte 0xC4" and byte_label(b"\xe4\xb8") == "bytes 0xE4 0xB8"
    found = PieceText("ä¸", (b"\xe4\xb8",), False)
    assert found.label() == "bytes 0xE4 0xB8"
    assert found.label(lambda run: f"<{run.hex()}>") == "<e4b8>"
    assert PieceText("Ġx", ("x",), True).label() == "␣x"


@pytest.mark.parametrize("family", ["roberta", "xlm-roberta", "gpt2"])
def test_predictions_carry_the_exact_pieces_and_what_they_read_as(family, lm_model):
    loaded, head = lm_model(family)
    found = predict(loaded.encoder, head, loaded.tokenizer, _encoding(loaded), 2, k=40)
    assert found.tokens == tuple(loaded.tokenizer.convert_ids_to_tokens(found.ids.tolist()))
    assert found.labels == tuple(piece_text(loaded.tokenizer, i).label() for i in found.ids.tolist())
    assert not any("Ġ" in label or "▁" in label or "\ufffd" in label for label in found.labels)


@pytest.mark.parametrize("family", DECODERS)
def test_a_decoder_s_logits_equal_its_causal_lm_s_own(family, lm_model):
    """Every logit, after the from-scratch decoder's final norm: Gemma 2's soft-capping of the logits included."""
    loaded, head = lm_model(family)
    encoding = _encoding(loaded)
    ids = torch.tensor(encoding.input_ids)[None]
    with torch.inference_mode():
        hidden = loaded.encoder(ids).last_hidden_state  # (1, t, hidden)
        ours, theirs = head.logits(hidden), head.model(input_ids=ids, use_cache=False).logits
        uncapped = head.model.lm_head(hidden)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)
    if family == "gemma2":  # without the cap the logits would differ
        assert head.model.config.final_logit_softcapping == GEMMA_LOGIT_CAP
        assert (uncapped - theirs).abs().max() > 1e-2


def test_a_bare_decoder_checkpoint_has_a_head_only_where_it_ties_it(family_model):
    assert load_lm_head(family_model("llama").info) is None  # LlamaModel saved, lm_head untied: nothing to read
    assert load_lm_head(family_model("gemma2").info).kind == "causal"  # Gemma 2's head is its embeddings


def test_a_read_while_another_thread_reads_still_ties_the_head_to_the_embeddings(tmp_path):
    """transformers swaps ``PreTrainedModel.tie_weights`` for a no-op while it reads a checkpoint; a GPT-2 read
    in another thread meanwhile came back untied, its LM head missing. Reads wait for each other."""
    import contextlib
    import threading

    from transformers.initialization import no_tie_weights

    from attention_viz.models import loading
    from attention_viz.models.lm_head import read_lm_model

    info = load_model(_save_lm("gpt2", tmp_path)).info
    reading, done = threading.Event(), threading.Event()

    def other_read() -> None:  # a read in progress elsewhere: inside the lock, tie_weights switched off
        with getattr(loading, "READ_LOCK", contextlib.nullcontext()), no_tie_weights():
            reading.set()
            done.wait(timeout=2)

    thread = threading.Thread(target=other_read)
    thread.start()
    reading.wait()
    try:
        model, missing = read_lm_model(info, AutoModelForCausalLM)
    finally:
        done.set()
        thread.join()
    assert missing == []
    assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def test_an_id_past_the_tokenizers_vocabulary_reads_as_its_number():
    """A model's embedding table may have more rows than its tokenizer has tokens (Qwen2: 151,936 rows for about
    151,650 tokens), and a model can predict or generate such an id: it gets a label, not an error."""
    from attention_viz.extraction.generation import extend_encoding, token_label

    tokenizer = _tokenizer("qwen2")
    past = len(tokenizer) + 7
    assert tokenizer.convert_ids_to_tokens(past) is None
    assert piece_text(tokenizer, past) == PieceText(f"id {past}", (f"id {past}",), False, True)
    assert token_label(tokenizer, past) == f"id {past}"
    prompt = encode(tokenizer, TEXT)
    known = int(prompt.input_ids[1])
    extended = extend_encoding(prompt, tokenizer, [known, past])
    assert extended.labels[-1] == extended.tokens[-1] == f"id {past}"
    assert extended.labels[-2] == token_label(tokenizer, known) and extended.num_tokens == prompt.num_tokens + 2
