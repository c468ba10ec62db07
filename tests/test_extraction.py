"""Extraction from transformers: attentions that exist (eager, not SDPA), sentence pairs, inputs longer than
the model, labels and validation."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from transformers import AutoModel

from attention_viz import extraction
from attention_viz.extraction import (
    AttentionError,
    InputError,
    capture,
    encode,
    extract,
    pretrained_attention,
    reference_attention,
    validate_attentions,
)
from attention_viz.models.loading import bundled_model_path


def test_eager_attentions_exist_with_one_row_per_token(bundled):
    """With eager attention, "The cat sat on the mat." (9 tokens) gives 6 layers of (1, 12, 9, 9), read by
    name from the output, every row summing to 1."""
    batch = bundled.tokenizer("The cat sat on the mat.", return_tensors="pt")
    with torch.inference_mode():
        outputs = bundled.model(**batch, output_attentions=True)
    assert len(outputs.attentions) == 6
    for tensor in outputs.attentions:
        assert tensor.shape == (1, 12, 9, 9)
        torch.testing.assert_close(tensor.sum(-1), torch.ones(1, 12, 9), atol=1e-5, rtol=0)
    result = extract(bundled, "The cat sat on the mat.")
    assert result.weights.shape == (6, 12, 9, 9) and result.weights.dtype == np.float32
    assert result.encoding.tokens == ("[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]")


def test_sdpa_model_gets_a_clear_message(bundled):
    """transformers 5 runs BERT with SDPA by default, which returns no attentions: say to load it eager."""
    sdpa = AutoModel.from_pretrained(bundled_model_path(), attn_implementation="sdpa").eval()
    encoding = encode(bundled.tokenizer, "The cat sat on the mat.")
    with pytest.raises(AttentionError, match="attn_implementation='eager'"):
        pretrained_attention(sdpa, encoding)


def test_extracting_does_not_change_the_shared_config(bundled):
    extract(bundled, "hello")
    assert not bundled.model.config.output_attentions
    assert bundled.model.config._attn_implementation == "eager"


def test_sentence_pair_token_types_reach_the_model(bundled):
    """The pair "The cat sat on the mat" / "The cat lay on the rug" is 15 tokens, token_type_ids 8 zeros then
    7 ones, and they reach the model (embedded as one sentence, the attention changes)."""
    result = extract(bundled, "The cat sat on the mat", "The cat lay on the rug")
    encoding = result.encoding
    assert encoding.num_tokens == 15
    assert encoding.token_type_ids.tolist() == [0] * 8 + [1] * 7
    assert encoding.segments.tolist() == [0] * 8 + [1] * 7
    assert encoding.special.tolist() == [True] + [False] * 6 + [True] + [False] * 6 + [True]
    assert encoding.is_pair
    # the segment ids reach the model: without them the attention changes
    as_single = encoding.__class__(**{**encoding.__dict__, "token_type_ids": np.zeros(15, dtype=np.int64)})
    without = pretrained_attention(bundled.model, as_single)
    assert np.abs(without - result.weights).max() > 1e-3


def test_word_ids_run_across_the_pair(bundled):
    encoding = encode(bundled.tokenizer, "a b", "c d")
    assert encoding.word_ids.tolist() == [-1, 0, 1, -1, 2, 3, -1]


def test_input_longer_than_the_model_is_cut_to_512_tokens(bundled):
    """Six hundred "hello"s are 602 tokens for a 512-position BERT: cut to [CLS], 510 × hello, [SEP], and
    marked as truncated with the number of tokens typed."""
    result = extract(bundled, "hello " * 600)
    encoding = result.encoding
    assert encoding.num_input_tokens == 602
    assert encoding.truncated and encoding.num_tokens == 512
    assert encoding.tokens[0] == "[CLS]" and encoding.tokens[-1] == "[SEP]"
    assert set(encoding.tokens[1:-1]) == {"hello"}
    assert result.weights.shape == (6, 12, 512, 512)
    np.testing.assert_allclose(result.weights.sum(-1), 1, atol=1e-5)


def test_pair_is_cut_to_the_maximum(bundled):
    encoding = encode(bundled.tokenizer, "hello " * 400, "world " * 400, max_length=512)
    assert encoding.truncated and encoding.num_tokens == 512 and encoding.num_input_tokens == 803
    assert encoding.segments.tolist().count(1) > 200


def test_labels_are_what_the_user_typed(bundled):
    encoding = encode(bundled.tokenizer, "I have a new GPU! 你好")
    assert encoding.tokens == ("[CLS]", "i", "have", "a", "new", "gp", "##u", "!", "[UNK]", "[UNK]", "[SEP]")
    assert encoding.labels == ("[CLS]", "I", "have", "a", "new", "GP", "##U", "!", "你 [UNK]", "好 [UNK]", "[SEP]")
    assert encoding.word_ids.tolist() == [-1, 0, 1, 2, 3, 4, 4, 5, 6, 7, -1]


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_empty_text_is_refused(bundled, text):
    with pytest.raises(InputError, match="empty"):
        extract(bundled, text)


def test_blank_pair_means_no_pair(bundled):
    assert not encode(bundled.tokenizer, "hello", "  ").is_pair


def test_unknown_source_and_variant(bundled):
    with pytest.raises(InputError, match="source"):
        extract(bundled, "hi", source="bertviz")
    with pytest.raises(InputError, match="variant"):
        extract(bundled, "hi", source="scratch", variant="fast")


def test_head_index_is_checked(bundled):
    result = extract(bundled, "hi there")
    assert np.array_equal(result.head(5, 11), result.weights[5, 11])
    with pytest.raises(IndexError, match="layers 0-5, heads 0-11"):
        result.head(6, 0)


def _valid(layers=2, heads=3, t=4):
    return tuple(torch.softmax(torch.randn(1, heads, t, t), -1) for _ in range(layers))


def test_validation_of_what_transformers_returns():
    assert validate_attentions(_valid(), 2, 3, 4).shape == (2, 3, 4, 4)
    with pytest.raises(AttentionError, match="no attention weights"):
        validate_attentions((), 2, 3, 4)
    with pytest.raises(AttentionError, match="2 layers, got 1"):
        validate_attentions(_valid(layers=1), 2, 3, 4)
    with pytest.raises(AttentionError, match="shape"):
        validate_attentions(_valid(t=5), 2, 3, 4)
    broken = _valid()
    broken[0][0, 0, 0, 0] = float("nan")
    with pytest.raises(AttentionError, match="NaN"):
        validate_attentions(broken, 2, 3, 4)
    with pytest.raises(AttentionError, match="sum to 1"):
        validate_attentions(tuple(t * 1.1 for t in _valid()), 2, 3, 4)


def test_results_pickle_for_the_cache(bundled):
    import pickle

    result = extract(bundled, "The cat sat.")
    again = pickle.loads(pickle.dumps(result))
    assert np.array_equal(again.weights, result.weights) and again.encoding.labels == result.encoding.labels


@pytest.fixture(scope="module")
def no_token_types_dir(tmp_path_factory, tiny_model_dir):
    """A tiny BERT whose tokenizer_config leaves token_type_ids out of model_input_names: its tokenizer
    returns none unless asked."""
    import json
    import shutil

    folder = tmp_path_factory.mktemp("no-token-types") / "model"
    shutil.copytree(tiny_model_dir, folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["model_input_names"] = ["input_ids", "attention_mask"]
    config_path.write_text(json.dumps(config))
    return str(folder)


def test_tokenizer_without_token_type_ids_still_gives_a_pair_its_segments(no_token_types_dir):
    """Token types are asked for explicitly: "The cat sat." / "It slept." gives 0 0 0 0 0 0 1 1 1 1."""
    from attention_viz.models.loading import load_model

    loaded = load_model(no_token_types_dir)
    assert "token_type_ids" not in loaded.tokenizer("The cat sat.")  # the fault this guards against
    single = extract(loaded, "The cat sat.")
    assert single.encoding.token_type_ids.tolist() == [0] * 6
    pair = extract(loaded, "The cat sat.", "It slept.")
    assert pair.encoding.token_type_ids.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert pair.encoding.segments.tolist() == pair.encoding.token_type_ids.tolist()
    np.testing.assert_allclose(pair.weights.sum(-1), 1, atol=1e-5)


@pytest.mark.parametrize("invisible", ["\u200b", "\ufeff", "\u00ad", "\u0301", "\x00\x07", "\u200b \u200c\t\ufeff"])
def test_text_that_normalises_to_nothing_is_empty(bundled, invisible):
    """BERT's normaliser deletes zero-width spaces, byte-order marks, soft hyphens, lone combining marks and
    control characters, which str.strip() keeps: such a text is [CLS] [SEP] only, an empty input."""
    with pytest.raises(InputError, match="empty") as caught:
        extract(bundled, invisible)
    assert caught.value.code == "empty"


def test_invisible_second_sentence_is_no_pair(bundled):
    """A second sentence that normalises to nothing would add only a [SEP]: the input is a single sentence,
    and what the model is given and what is reported agree."""
    encoding = encode(bundled.tokenizer, "The cat sat.", "\u200b")
    assert not encoding.is_pair and encoding.segments.tolist() == [0] * 6
    assert encoding.token_type_ids.tolist() == encoding.segments.tolist()  # given == reported
    assert encoding.tokens == encode(bundled.tokenizer, "The cat sat.").tokens
    assert not encoding.truncated and encoding.num_input_tokens == 6


def test_pair_cut_says_which_sentence_lost_how_many(bundled):
    encoding = encode(bundled.tokenizer, "hello " * 400, "world " * 100, max_length=512)
    assert encoding.num_input_tokens == 503 and not encoding.truncated and encoding.cut == (0, 0)
    # longest_first: one token at a time from the longer sentence until 400 + 300 + 3 fits in 512
    long = encode(bundled.tokenizer, "hello " * 400, "world " * 300, max_length=512)
    kept_a, kept_b = long.segments[~long.special].tolist().count(0), long.segments[~long.special].tolist().count(1)
    assert long.num_input_tokens == 703 and long.num_tokens == 512
    assert long.cut == (400 - kept_a, 300 - kept_b) and sum(long.cut) == 703 - 512
    assert long.cut[0] > long.cut[1]  # the longer sentence is cut first


def test_character_and_token_limits(bundled):
    from attention_viz.settings import Limits

    with pytest.raises(InputError, match="10 characters; the limit is 5") as caught:
        encode(bundled.tokenizer, "0123456789", limits=Limits(max_chars=5))
    assert caught.value.code == "too_long" and caught.value.fields == {"which": "text", "chars": 10, "limit": 5}
    with pytest.raises(InputError, match="second sentence") as caught:
        encode(bundled.tokenizer, "hi", "a long one", limits=Limits(max_chars=5))
    assert caught.value.fields["which"] == "pair"
    short = extract(bundled, "one two three four five six", limits=Limits(max_tokens=5))
    assert short.encoding.num_tokens == 5 and short.encoding.cut == (3, 0) and short.weights.shape[-1] == 5


def test_a_megabyte_is_refused_before_tokenising(bundled, monkeypatch):
    def no_tokenizer(*args, **kwargs):
        raise AssertionError("tokenised a text over the limit")

    monkeypatch.setattr(bundled.tokenizer.__class__, "__call__", no_tokenizer)
    with pytest.raises(InputError) as caught:
        encode(bundled.tokenizer, "x" * 1_000_000)
    assert caught.value.code == "too_long" and caught.value.fields["chars"] == 1_000_000


def test_a_half_precision_model_is_named_as_the_cause(bundled):
    """A float16 model's rows sum to 1 only within about 4e-4: the validation message names the dtype."""
    half = AutoModel.from_pretrained(bundled_model_path(), attn_implementation="eager").half().eval()
    encoding = encode(bundled.tokenizer, "The cat sat on the mat.")
    try:
        pretrained_attention(half, encoding)
    except AttentionError as exc:  # rows off by ~4e-4 in float16: the message names the dtype
        assert "runs in float16" in str(exc) and "eval mode" not in str(exc)
    broken = tuple(t.half() * 1.01 for t in _valid())
    with pytest.raises(AttentionError, match="runs in float16"):
        validate_attentions(broken, 2, 3, 4)


def _transformers_attention(model, encoding):
    inputs = extraction.model_inputs(encoding)
    with torch.inference_mode():
        return torch.cat(model(**inputs, output_attentions=True).attentions).numpy()  # (L, h, t, t)


def _hooks(model) -> list[int]:
    return [len(module._forward_hooks) for module in model.modules()]


@pytest.mark.parametrize("text", ["The cat sat on the mat.", "word " * 200])
def test_weights_taken_by_hooks_are_transformers_own_bit_for_bit(bundled, text):
    """The forward stops after the last layer's attention; the weights are exactly output_attentions'."""
    encoding = encode(bundled.tokenizer, text, "And a second sentence.")
    weights = pretrained_attention(bundled.model, encoding)
    hooks = _hooks(bundled.model)
    assert np.array_equal(weights, _transformers_attention(bundled.model, encoding))
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert np.array_equal(pretrained_attention(bundled.model, encoding), weights)
    assert _hooks(bundled.model) == hooks  # each call removes its hooks


def test_tiny_models_through_hooks_and_through_a_whole_forward_agree(tiny_model):
    encoding = encode(tiny_model.tokenizer, "The trophy didn't fit in the suitcase.")
    hooked = pretrained_attention(tiny_model.model, encoding)
    assert np.array_equal(hooked, _transformers_attention(tiny_model.model, encoding))
    assert np.array_equal(reference_attention(tiny_model.model, encoding), hooked)  # output_attentions=True


def test_a_refused_layer_leaves_the_model_usable(bundled):
    sdpa = AutoModel.from_pretrained(bundled_model_path(), attn_implementation="sdpa").eval()
    with pytest.raises(AttentionError, match="no attention weights"):
        pretrained_attention(sdpa, encode(bundled.tokenizer, "hi"))
    with torch.inference_mode():  # no collector is left behind: a plain forward runs whole
        assert sdpa(**bundled.tokenizer("hi", return_tensors="pt")).last_hidden_state.shape == (1, 3, 384)


def test_sessions_extracting_at_once_from_one_model_each_get_their_own_weights(bundled):
    """The app shares one model between sessions' threads; a hook fires in every thread's forward."""
    texts = [f"Sentence number {i} is {'long ' * (3 * i)}here." for i in range(6)]
    encodings = [encode(bundled.tokenizer, text) for text in texts]
    expected = [_transformers_attention(bundled.model, encoding) for encoding in encodings]
    with ThreadPoolExecutor(max_workers=6) as pool:
        for _ in range(3):
            got = list(pool.map(lambda e: pretrained_attention(bundled.model, e), encodings))
            for weights, want in zip(got, expected, strict=True):
                assert np.array_equal(weights, want)


def test_the_result_is_one_array_of_its_own(bundled):
    encoding = encode(bundled.tokenizer, "word " * 300)  # 302 tokens: 12 x 302 x 302 floats a layer
    weights = pretrained_attention(bundled.model, encoding)
    assert np.array_equal(weights, _transformers_attention(bundled.model, encoding))
    assert weights.flags.c_contiguous and weights.flags.owndata


def test_a_forward_that_fails_inside_attention_leaves_no_hook_behind(bundled):
    """The hooks are removed whatever the forward does: the next forward collects into its own array."""
    encoding = encode(bundled.tokenizer, "The cat sat on the mat.")
    want = _transformers_attention(bundled.model, encoding)
    value = bundled.model.encoder.layer[0].attention.self.value
    hooks = _hooks(bundled.model)

    def fail(module, inputs):
        raise RuntimeError("out of memory, say")

    handle = value.register_forward_pre_hook(fail)  # before the scores and the softmax of layer 0
    try:
        with pytest.raises(RuntimeError, match="out of memory"):
            pretrained_attention(bundled.model, encoding)
    finally:
        handle.remove()
    assert _hooks(bundled.model) == hooks
    scores = torch.randn(1, 12, 9, 9)
    assert torch.equal(torch.nn.functional.softmax(scores, -1), torch.softmax(scores, -1))  # a plain call
    assert np.array_equal(pretrained_attention(bundled.model, encoding), want)


def test_hooks_follow_a_reloaded_extraction_module(bundled, monkeypatch):
    """Streamlit's file watcher (a developer's --server.runOnSave) drops edited modules from sys.modules while
    the cached model lives on: no hook of the old module may stay on it and collect for nobody."""
    import importlib
    import sys

    encoding = encode(bundled.tokenizer, "The cat sat on the mat.")
    want = pretrained_attention(bundled.model, encoding)
    hooks = _hooks(bundled.model)
    monkeypatch.delitem(sys.modules, "attention_viz.extraction.capture")  # restored afterwards, with the old module
    monkeypatch.setattr(extraction, "capture", capture)  # the import below rebinds it; restored too
    reloaded = importlib.import_module("attention_viz.extraction.capture")
    assert reloaded is not capture
    assert np.array_equal(reloaded.pretrained_attention(bundled.model, encoding), want)
    assert _hooks(bundled.model) == hooks  # no hook left behind by either module
    assert np.array_equal(pretrained_attention(bundled.model, encoding), want)  # and back again


def test_extract_encoded_is_extract_without_a_second_tokenisation(tiny_model):
    encoding = extraction.encode(tiny_model.tokenizer, "The cat sat.", "It slept.")
    for source, variant, seed in (("pretrained", "exact", 0), ("scratch", "exact", 0), ("scratch", "random", 3)):
        ours = extraction.extract_encoded(tiny_model, encoding, source, variant, seed)
        whole = extraction.extract(tiny_model, "The cat sat.", "It slept.", source, variant, seed)
        assert ours.encoding is encoding and (ours.source, ours.variant, ours.seed) == (
            whole.source,
            whole.variant,
            whole.seed,
        )
        np.testing.assert_array_equal(ours.weights, whole.weights)
    with pytest.raises(extraction.InputError, match="unknown source"):
        extraction.extract_encoded(tiny_model, encoding, "theirs")
    with pytest.raises(extraction.InputError, match="unknown variant"):
        extraction.extract_encoded(tiny_model, encoding, "scratch", "upside-down")


def test_check_length_refuses_either_sentence_over_the_limit():
    from attention_viz.settings import Limits

    extraction.check_length("x" * 10, "y" * 10, Limits(max_chars=10))
    with pytest.raises(extraction.InputError) as refused:
        extraction.check_length("x" * 10, "y" * 11, Limits(max_chars=10))
    assert refused.value.code == "too_long" and refused.value.fields == {"which": "pair", "chars": 11, "limit": 10}


def _corrupt(how: str):
    """A forward hook that spoils the second layer's weights: a NaN, or every row summing to 1.1."""

    def hook(module, inputs, output):
        weights = output[1].clone()  # (b, h, t, t)
        if how == "nan":
            weights[..., 0, 0] = float("nan")
        else:
            weights = weights * 1.1
        return (output[0], weights, *output[2:])

    return hook


class _UnusedHead:
    """A language-model head the check must stop before: reaching it fails the test."""

    def logits(self, hidden):
        raise AssertionError("the head was reached with invalid attention")


def _scratch_paths(loaded, encoding) -> dict:
    from attention_viz.analysis import knockout, rollout, steps
    from attention_viz.models import lm_head

    encoder = loaded.encoder
    head = _UnusedHead()
    return {
        "scratch_attention": lambda: extraction.scratch_attention(encoder, encoding),
        "rollout_and_norms": lambda: rollout.rollout_and_norms(encoder, encoding, 1),
        "layer_maps": lambda: rollout.layer_maps(encoder, encoding, [0, 1], "norm"),
        "layer_inputs": lambda: steps.layer_inputs(encoder, encoding),
        "knock_out_key": lambda: knockout.knock_out_key(encoder, encoding, 2, "head", 1, 0),
        "predict": lambda: lm_head.predict(encoder, head, loaded.tokenizer, encoding, 1),
        "changed_predictions": lambda: knockout.changed_predictions(
            encoder, head, loaded.tokenizer, encoding, 1, 5, off=(0, 1)
        ),
    }


def _pretrained_paths(loaded, encoding) -> dict:
    from attention_viz.analysis import head_scores

    ids = np.stack([encoding.input_ids, encoding.input_ids[::-1]])  # (2, t)
    return {
        "reference_attention": lambda: reference_attention(loaded.model, encoding),
        "pretrained_attention": lambda: pretrained_attention(loaded.model, encoding),
        "head_scores": lambda: head_scores._forward_attention(loaded, ids),
    }


SCRATCH_PATHS = (
    "scratch_attention",
    "rollout_and_norms",
    "layer_maps",
    "layer_inputs",
    "knock_out_key",
    "predict",
    "changed_predictions",
)
PRETRAINED_PATHS = ("reference_attention", "pretrained_attention", "head_scores")
REFUSALS = {
    "nan": "attention weights contain NaN or infinity",
    "rows": r"attention rows do not sum to 1 \(off by 0.1\)",
}


@pytest.fixture(scope="module")
def tiny_loaded(tiny_model_dir):
    from attention_viz.models.loading import load_model

    loaded = load_model(tiny_model_dir)
    return loaded, encode(loaded.tokenizer, "The cat sat on the mat.", None, loaded.info.max_positions)


@pytest.mark.parametrize("how", sorted(REFUSALS))
@pytest.mark.parametrize("path", [*SCRATCH_PATHS, *PRETRAINED_PATHS])
def test_every_forward_refuses_invalid_weights_with_one_message(tiny_loaded, path, how):
    """Every way the package runs a model (the from-scratch encoder's analyses, the pretrained model's one
    input and batch) passes the weights through the one check: a NaN in layer 1, or rows that sum to 1.1, is an
    AttentionError that says which, before any result is made from them; unspoilt, each path runs."""
    loaded, encoding = tiny_loaded
    paths = _scratch_paths(loaded, encoding) | _pretrained_paths(loaded, encoding)
    scratch = path not in PRETRAINED_PATHS
    module = (
        loaded.encoder.layers[1].attention
        if scratch
        else capture.family_of(loaded.model).attention_modules(loaded.model)[1]
    )
    handle = module.register_forward_hook(_corrupt(how), prepend=True)  # before transformers' own recording hook
    try:
        with pytest.raises(AttentionError, match=REFUSALS[how]):
            paths[path]()
    finally:
        handle.remove()
    if path not in ("predict", "changed_predictions"):  # these need a real language-model head
        paths[path]()
