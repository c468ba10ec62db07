"""A checkpoint's language-model head, when it has one: a masked-LM head (BERT's ``BertForMaskedLM`` and its
kin) or GPT-2's causal-LM head, on top of the from-scratch encoder's last hidden state.

The head is read with transformers' ``AutoModelForMaskedLM`` / ``AutoModelForCausalLM`` from the same folder
or hub name as the model (local files only, safetensors only, no remote code, float32). A checkpoint saved
without one (the bundled all-MiniLM-L6-v2 is a bare ``BertModel``) leaves the head's weights missing:
transformers would draw them at random, so :func:`load_lm_head` says there is none instead. GPT-2 ties its
head to the token embeddings, so every GPT-2 checkpoint has one.

The predictions run the from-scratch encoder, which takes a head mask and a key mask, and hand its last
hidden state to the head: with neither, the logits equal the transformers LM model's own (a test checks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

# The head's module(s) in each family's LM class, applied to the last hidden state ``(b, t, hidden)``.
_HEADS: dict[str, Callable] = {
    "bert": lambda m, h: m.cls(h),
    "roberta": lambda m, h: m.lm_head(h),
    "xlm-roberta": lambda m, h: m.lm_head(h),
    "albert": lambda m, h: m.predictions(h),
    "electra": lambda m, h: m.generator_lm_head(m.generator_predictions(h)),
    "distilbert": lambda m, h: m.vocab_projector(m.vocab_layer_norm(m.activation(m.vocab_transform(h)))),
    "gpt2": lambda m, h: m.lm_head(h),
}


@dataclass(frozen=True)
class LanguageModelHead:
    """A loaded LM head.

    Attributes:
        model: the transformers LM model (eval mode); only its head is used.
        kind: ``"masked"`` (predicts the token at a position) or ``"causal"`` (predicts the next token).
        family: the family's ``model_type``.
    """

    model: object
    kind: str
    family: str

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """``(b, t, vocab)`` logits from the last hidden state ``(b, t, hidden)``."""
        return _HEADS[self.family](self.model, hidden)


def load_lm_head(info) -> LanguageModelHead | None:
    """The LM head of the checkpoint a :class:`~attention_viz.models.loading.ModelInfo` was loaded from.

    Returns:
        :class:`LanguageModelHead`, or ``None`` when the family has no head here or the checkpoint was saved
        without its weights (the bundled model).
    """
    if info.family not in _HEADS:
        return None
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM
    from transformers.utils import logging as hf_logging

    kind = "causal" if info.causal else "masked"
    auto = AutoModelForCausalLM if info.causal else AutoModelForMaskedLM
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the warning about missing head weights is what we report instead
    try:
        model, report = auto.from_pretrained(
            info.path,
            output_loading_info=True,
            attn_implementation="eager",
            use_safetensors=True,
            dtype=torch.float32,
            trust_remote_code=False,
            local_files_only=True,
        )
    except (OSError, ValueError, KeyError) as exc:
        raise OSError(f"could not read the language-model head of {info.name!r}: {exc}") from exc
    finally:
        hf_logging.set_verbosity(verbosity)
    if report["missing_keys"]:
        return None
    return LanguageModelHead(model.eval(), kind, info.family)


@dataclass(frozen=True)
class Predictions:
    """The top-k predictions at one position.

    Attributes:
        position: the position read (a masked LM: the token there; causal: the token after it).
        ids: ``(k,)`` token ids, most probable first.
        tokens: their tokens as the tokenizer writes them.
        probabilities: ``(k,)`` softmax probabilities (0 to 1).
    """

    position: int
    ids: np.ndarray
    tokens: tuple[str, ...]
    probabilities: np.ndarray


def predict(
    encoder,
    head: LanguageModelHead,
    tokenizer,
    encoding,
    position: int,
    k: int = 5,
    head_mask: torch.Tensor | None = None,
    key_mask: torch.Tensor | None = None,
) -> Predictions:
    """Top-``k`` predictions at ``position``, optionally with heads switched off or keys removed.

    Args:
        encoder: the from-scratch encoder (its weights are the LM model's base).
        head: from :func:`load_lm_head`.
        tokenizer: the model's tokenizer (for the tokens' names).
        encoding: the input, ``t`` tokens.
        position: 0 to ``t − 1``.
        k: how many.
        head_mask: ``(L, h)``, 0 switches a head's output off (see the encoder).
        key_mask: ``(L, h, t)`` bool, True removes a key (see :mod:`attention_viz.analysis.knockout`).

    Raises:
        ValueError: a position out of range.
    """
    if not 0 <= position < encoding.num_tokens:
        raise ValueError(f"position {position} is out of range 0-{encoding.num_tokens - 1}")
    ids = torch.tensor(encoding.input_ids)[None]  # (1, t)
    types = torch.tensor(encoding.token_type_ids)[None]
    with torch.inference_mode():
        hidden = encoder(ids, types, head_mask=head_mask, key_mask=key_mask).last_hidden_state  # (1, t, hidden)
        probabilities = torch.softmax(head.logits(hidden)[0, position].double(), -1)  # (vocab,)
    top = torch.topk(probabilities, k)
    chosen = top.indices.numpy()
    return Predictions(position, chosen, tuple(tokenizer.convert_ids_to_tokens(chosen.tolist())), top.values.numpy())
