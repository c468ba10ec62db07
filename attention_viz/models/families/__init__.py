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


__all__ = ["Family", "UnsupportedFamilyError", "families", "family_for", "supported"]
