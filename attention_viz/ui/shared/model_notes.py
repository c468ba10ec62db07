"""Notes a page shows for a model family's particulars: shared layer weights, a decoder's mask.

One call per page, right where the page shows layers; nothing is shown for a model without them.
"""

from __future__ import annotations

import streamlit as st

from attention_viz.models.loading import ModelInfo
from attention_viz.ui.text.i18n import t


def layers(info: ModelInfo) -> None:
    """Under a view of layers: ALBERT's layers share weights; a decoder's maps are lower-triangular."""
    if info.layer_weight_sets:
        key = "families.shared_layers_one" if info.layer_weight_sets == 1 else "families.shared_layers"
        st.caption(t(key, family=info.family_name, layers=info.num_layers, sets=info.layer_weight_sets))
    if info.causal:
        st.caption(t("families.causal", family=info.family_name))


def not_applicable(info: ModelInfo, columns: list[str]) -> None:
    """Say which statistics a decoder leaves empty (``columns``: their shown names), and why."""
    if info.causal and columns:
        st.caption(t("families.not_applicable", family=info.family_name, columns=", ".join(columns)))
