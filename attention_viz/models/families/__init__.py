"""Model families: one module each, found by ``config.model_type``.

Each module of this package holds one :class:`~attention_viz.models.families.base.Family` named
``FAMILY``: how its checkpoint's names map onto the from-scratch encoder, its position and segment
rules, whether it takes token types, whether it is causal, and which transformers modules compute its
attention. Adding a family is adding one module (and its test); nothing here lists them.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

import torch
from torch import nn

from attention_viz.models.decoder import Decoder, DecoderConfig
from attention_viz.models.encoder import BertEncoder, EncoderConfig, WeightMismatchError, load_weights
from attention_viz.models.families.base import Family


class UnsupportedFamilyError(ValueError):
    """A ``model_type`` no family module handles; the message names the supported ones."""


@cache
def families() -> dict[str, Family]:
    """Every supported family by ``model_type``, in the order of their module names."""
    found = {}
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name != "base":
            family = getattr(importlib.import_module(f"{__name__}.{module.name}"), "FAMILY", None)
            if family is not None:
                found[family.model_type] = family
    return found


def supported() -> tuple[str, ...]:
    """The supported ``model_type`` values, e.g. ``("albert", "bert", ...)``."""
    return tuple(families())


def family_for(model_type: str) -> Family:
    """The family of a ``config.model_type``.

    Raises:
        UnsupportedFamilyError: for a model type no family handles, naming the ones that are.
    """
    found = families().get(str(model_type))
    if found is None:
        raise UnsupportedFamilyError(
            f"{model_type!r} models are not supported; supported families: {', '.join(supported())}"
        )
    return found


def encoder_config(config) -> EncoderConfig | DecoderConfig:
    """The from-scratch encoder's config for a transformers config of any supported family.

    Raises:
        WeightMismatchError: for a family that is not supported, or settings the encoder does not
            implement (non-absolute positions, an unknown activation, a decoder BERT).
    """
    try:
        family = family_for(config.model_type)
    except UnsupportedFamilyError as exc:
        raise WeightMismatchError(str(exc)) from None
    return family.encoder_config(config)


def encoder_from_pretrained(model: nn.Module) -> BertEncoder | Decoder:
    """A from-scratch encoder with a copy of a transformers model's weights, in eval mode.

    The model's ``config.model_type`` picks its family (:func:`family_for`), which says how the
    checkpoint's names map onto the encoder's, and which from-scratch model it is (:class:`BertEncoder`,
    or :class:`~attention_viz.models.decoder.Decoder` for a Llama-style decoder).

    Raises:
        WeightMismatchError: if the family or a setting is unsupported, or any weight is missing,
            unused or of another shape.
    """
    try:
        family = family_for(model.config.model_type)
    except UnsupportedFamilyError as exc:
        raise WeightMismatchError(str(exc)) from None
    config = family.encoder_config(model.config)
    with torch.device("meta"):  # shapes only: every weight is replaced by the checkpoint's (no random init)
        encoder = family.model_class(config)
    names = lambda name: family.checkpoint_name(name, config)  # noqa: E731
    load_weights(encoder, model.state_dict(), names, family.unused, family.transposed, assign=True)
    return encoder.eval()


__all__ = [
    "Family",
    "UnsupportedFamilyError",
    "encoder_config",
    "encoder_from_pretrained",
    "families",
    "family_for",
    "supported",
]
