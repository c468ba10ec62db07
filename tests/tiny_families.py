"""Tiny random checkpoints of every supported family, built offline in a folder.

Each has 2-3 layers of 4 heads (hidden 32) and a real tokenizer of its kind: the bundled WordPiece for
BERT, DistilBERT and ELECTRA; a byte-level BPE (RoBERTa, GPT-2) or a SentencePiece-style Unigram
(XLM-R, ALBERT) trained here on a few lines with the ``tokenizers`` library. Query and key weights are
drawn wider than the families' init so that heads have structure and a wrong mask or position shows.

The Llama-style decoders (:data:`DECODERS`) have 4 query heads sharing 2 key/value heads and the same
byte-level BPE, with ``<s>`` put in front of every text (Llama, Mistral, Gemma 2) or nothing (Qwen).
"""

from __future__ import annotations

import json
from functools import cache

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    AlbertConfig,
    AlbertModel,
    AlbertTokenizer,
    AutoTokenizer,
    BertConfig,
    BertModel,
    DistilBertConfig,
    DistilBertModel,
    DistilBertTokenizer,
    ElectraConfig,
    ElectraModel,
    Gemma2Config,
    Gemma2Model,
    GPT2Config,
    GPT2Model,
    GPT2Tokenizer,
    LlamaConfig,
    LlamaModel,
    MistralConfig,
    MistralModel,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2Model,
    Qwen3Config,
    Qwen3Model,
    RobertaConfig,
    RobertaModel,
    RobertaTokenizer,
    XLMRobertaConfig,
    XLMRobertaModel,
    XLMRobertaTokenizer,
)

from attention_viz.extraction import model_inputs
from attention_viz.models import families
from attention_viz.models.loading import bundled_model_path
from benchmarks.tiny import byte_level_bpe

FAMILIES = ("albert", "bert", "distilbert", "electra", "gpt2", "roberta", "xlm-roberta")
DECODERS = ("gemma2", "llama", "mistral", "qwen2", "qwen3")
LINES = [
    "The cat sat on the mat.",
    "The animal didn't cross the street because it was too tired.",
    "I have a new GPU! Naïve café, déjà vu.",
    "The quick brown fox jumps over the lazy dog; it's 2024.",
    "Where is it? It is in the box.",
    "Attention is all you need, or so the paper says.",
]
SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
POSITIONS = 64
DECODER_SIZES = SIZES | dict(num_key_value_heads=2, max_position_embeddings=POSITIONS)
MISTRAL_WINDOW = 6  # keys a query of Mistral's tiny model sees: texts longer than it show the window
GEMMA_WINDOW = 4  # the window of Gemma 2's local layer 0 (layer 1 is global)


@cache
def _bpe() -> tuple[dict, list]:
    return byte_level_bpe(LINES * 4, 400)


@cache
def _unigram(specials: tuple[str, ...], unk: str) -> list[tuple[str, float]]:
    """A Unigram vocabulary, the specials first in the order the family's tokenizer expects them."""
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()])
    trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=list(specials), unk_token=unk, show_progress=False)
    tokenizer.train_from_iterator([line.lower() for line in LINES] * 4 + LINES * 4, trainer)
    return [tuple(entry) for entry in json.loads(tokenizer.to_str())["model"]["vocab"]]


def _decoder_tokenizer(family: str) -> PreTrainedTokenizerFast:
    """The byte-level BPE with ``<s>`` before each text (Llama, Mistral, Gemma 2) or nothing before it (Qwen)."""
    vocab, merges = _bpe()
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    steps = [processors.ByteLevel(trim_offsets=False)]
    if not family.startswith("qwen"):
        template = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", vocab["<s>"])])
        steps.append(template)
        specials = dict(bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>")
    else:  # Qwen: no beginning-of-sequence token; <|endoftext|> ends and pads
        specials = dict(eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    tokenizer.post_processor = processors.Sequence(steps)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, **specials)


def _decoder_model(family: str, vocab_size: int, **options):
    """A tiny random model of a Llama-style family; ``options`` override its config (RoPE scaling, window)."""
    sizes = DECODER_SIZES | {"vocab_size": vocab_size}
    if family == "llama":
        return LlamaModel(LlamaConfig(**sizes | options))
    if family == "qwen2":
        return Qwen2Model(Qwen2Config(**sizes | options))
    if family == "qwen3":  # head_dim apart from hidden / heads, as the released Qwen3 models have it
        return Qwen3Model(Qwen3Config(**sizes | {"head_dim": 16} | options))
    if family == "mistral":
        return MistralModel(MistralConfig(**sizes | {"sliding_window": MISTRAL_WINDOW} | options))
    gemma = dict(
        head_dim=16,
        query_pre_attn_scalar=24,  # not head_dim: a scaling by head_dim ** -0.5 would show
        attn_logit_softcapping=5.0,  # low enough to bend the sharpened scores
        sliding_window=GEMMA_WINDOW,
        layer_types=["sliding_attention", "full_attention"],
    )
    return Gemma2Model(Gemma2Config(**sizes | gemma | options))


def _tokenizer(family: str):
    if family in DECODERS:
        return _decoder_tokenizer(family)
    if family in ("bert", "electra"):
        return AutoTokenizer.from_pretrained(bundled_model_path())
    if family == "distilbert":
        return DistilBertTokenizer.from_pretrained(bundled_model_path())
    if family == "roberta":
        return RobertaTokenizer(vocab=_bpe()[0], merges=_bpe()[1])
    if family == "gpt2":
        return GPT2Tokenizer(vocab=_bpe()[0], merges=_bpe()[1])
    if family == "xlm-roberta":  # XLM-R's ids: <s> 0, <pad> 1, </s> 2, <unk> 3
        return XLMRobertaTokenizer(vocab=_unigram(("<s>", "<pad>", "</s>", "<unk>", "<mask>"), "<unk>"))
    return AlbertTokenizer(vocab=_unigram(("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"), "<unk>"))  # <unk> is 1


def _model(family: str, vocab_size: int, pad: int | None):
    if family == "bert":
        return BertModel(BertConfig(vocab_size=vocab_size, max_position_embeddings=POSITIONS, **SIZES))
    if family in ("roberta", "xlm-roberta"):
        config_class, model_class = (
            (RobertaConfig, RobertaModel) if family == "roberta" else (XLMRobertaConfig, XLMRobertaModel)
        )
        positions = POSITIONS + pad + 1  # RoBERTa's positions start after the padding index
        config = config_class(
            vocab_size=vocab_size, max_position_embeddings=positions, type_vocab_size=1, pad_token_id=pad, **SIZES
        )
        return model_class(config)
    if family == "distilbert":
        config = DistilBertConfig(
            vocab_size=vocab_size, max_position_embeddings=POSITIONS, dim=32, n_layers=2, n_heads=4, hidden_dim=37
        )
        return DistilBertModel(config)
    if family == "electra":
        config = ElectraConfig(vocab_size=vocab_size, max_position_embeddings=POSITIONS, embedding_size=16, **SIZES)
        return ElectraModel(config)
    if family == "albert":
        sizes = SIZES | {"num_hidden_layers": 3}
        config = AlbertConfig(
            vocab_size=vocab_size, max_position_embeddings=POSITIONS, embedding_size=16, pad_token_id=pad, **sizes
        )
        return AlbertModel(config)
    end = _bpe()[0]["<|endoftext|>"]
    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=POSITIONS,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_inner=37,
        bos_token_id=end,
        eos_token_id=end,
    )
    return GPT2Model(config)


def make_tiny(family: str, folder, seed: int = 0, **options) -> str:
    """Save a random model of ``family`` (safetensors) with a tokenizer of its kind in ``folder``; ``options``
    override a decoder's config (``rope_parameters``, ``sliding_window``)."""
    tokenizer = _tokenizer(family)
    torch.manual_seed(seed)
    if family in DECODERS:
        model = _decoder_model(family, len(tokenizer), **options)
    else:
        model = _model(family, len(tokenizer), tokenizer.pad_token_id)
    with torch.no_grad():  # the families' init (std 0.02) gives near-uniform attention: sharpen it so tests bite
        for name, param in model.named_parameters():
            query_key = ("query.weight", "key.weight", "q_lin.weight", "k_lin.weight", "c_attn.weight", "q_proj.weight")
            if name.endswith((*query_key, "k_proj.weight")):
                param.normal_(0.0, 0.5)
            elif name.endswith("norm.weight") and family in DECODERS:  # RMSNorm: not all 1 (Gemma: 1 + 0)
                param.normal_(0.0 if family == "gemma2" else 1.0, 0.2)
            elif name.endswith("bias") and family in DECODERS:  # Qwen2's q, k, v biases: not all 0
                param.normal_(0.0, 0.5)
            elif name.endswith(("embeddings_project.weight", "embedding_hidden_mapping_in.weight")):
                param.normal_(0.0, 0.5)  # the projection feeds layer 0 with no LayerNorm between
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


def transformers_attentions(loaded, encoding) -> tuple[torch.Tensor, ...]:
    """transformers' attention weights of one encoding, one ``(1, h, t, t)`` tensor per layer."""
    family = families.family_for(loaded.info.family)
    with torch.inference_mode():
        return loaded.model(**family.model_kwargs(model_inputs(encoding)), output_attentions=True).attentions


def twin_attentions(loaded, encoding) -> tuple[torch.Tensor, ...]:
    """The from-scratch twin's attention weights of the same encoding, as :func:`transformers_attentions`."""
    inputs = model_inputs(encoding)
    with torch.inference_mode():
        return loaded.encoder(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"]).attentions
