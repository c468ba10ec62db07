"""#10 families besides BERT: extraction ÷ a bare forward and our encoder ÷ transformers, for RoBERTa and GPT-2.

Both at their base size (12 layers × 12 heads, hidden 768; RoBERTa 514 positions, GPT-2 1,024) with
random weights, which cost what trained ones do, and a byte-level BPE vocabulary trained here on the
benchmark paragraph (the real 50k-entry tables would only add an embedding lookup). Built offline in a
temporary folder and loaded through ``load_model``, as a downloaded checkpoint would be.
"""

from __future__ import annotations

import tempfile
from functools import cache

import torch

from attention_viz import extraction
from attention_viz.models import families
from attention_viz.models.loading import LoadedModel, load_model
from benchmarks.harness import PARAGRAPH, Row, Settings, corpus, interleaved, seconds_row, text_of_tokens
from benchmarks.tiny import byte_level_bpe

FAMILIES = ("roberta", "gpt2")


@cache
def _bpe() -> tuple[dict, list]:
    return byte_level_bpe([PARAGRAPH, *corpus(64)], 1000)


def base_model(family: str) -> LoadedModel:
    """A base-sized random RoBERTa or GPT-2, saved in a temporary folder and loaded like any checkpoint."""
    from transformers import GPT2Config, GPT2Model, GPT2Tokenizer, RobertaConfig, RobertaModel, RobertaTokenizer

    vocab, merges = _bpe()
    folder = tempfile.mkdtemp(prefix=f"benchmark-{family}-")
    torch.manual_seed(0)
    if family == "roberta":
        tokenizer = RobertaTokenizer(vocab=vocab, merges=merges)
        config = RobertaConfig(
            vocab_size=len(tokenizer), max_position_embeddings=514, type_vocab_size=1, pad_token_id=1
        )
        model = RobertaModel(config)
    else:
        tokenizer = GPT2Tokenizer(vocab=vocab, merges=merges)
        end = vocab["<|endoftext|>"]
        model = GPT2Model(GPT2Config(vocab_size=len(tokenizer), bos_token_id=end, eos_token_id=end))
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return load_model(folder)


def family_rows(settings: Settings) -> list[Row]:
    """#10: per family and size, ``extract`` ÷ a bare eager forward, and our encoder ÷ transformers' forward."""
    rows = []
    for family in FAMILIES:
        loaded = base_model(family)
        for n in (128,) if settings.quick else (128, 512):
            rows.extend(_measure(loaded, family, n, settings))
    return rows


def _measure(loaded: LoadedModel, family: str, n: int, settings: Settings) -> list[Row]:
    text = text_of_tokens(loaded.tokenizer, n)
    inputs = extraction.model_inputs(extraction.encode(loaded.tokenizer, text))
    kwargs = families.family_for(family).model_kwargs(inputs)

    def bare():
        with torch.inference_mode():
            return loaded.model(**kwargs, output_attentions=True)

    def ours():
        with torch.inference_mode():
            return loaded.encoder(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"])

    a, b = interleaved(lambda: extraction.extract(loaded, text), bare, settings)
    rows = [_row(family, n, "extraction", a, b, "bare eager model(**inputs, output_attentions=True)")]
    a, b = interleaved(ours, bare, settings)
    exact = all(torch.equal(x, y) for x, y in zip(ours().attentions, bare().attentions, strict=True))
    return [*rows, _row(family, n, "from-scratch encoder forward", a, b, "transformers eager forward", exact)]


def _row(family: str, n: int, what: str, ours: list, base: list, baseline: str, exact: bool | None = None) -> Row:
    scratch = exact is not None
    row = seconds_row(
        "10",
        f"{family}: {what}",
        f"{n} tokens",
        ours,
        base,
        baseline,
        target="≤ 1.0× and bit for bit" if scratch else "≤ 1.05×",
        note=("attention equal to transformers' bit for bit" if exact else "attention differs") if scratch else "",
    )
    row.passed = (row.ratio <= 1.0 and exact) if scratch else row.ratio <= 1.05
    return row
