"""Every place the core leans on a library internal, in one module (it imports no Streamlit).

Each entry says why it is used and what breaks it; ``tests/test_internals.py`` checks each against the
installed library, so an upgrade that changes one fails there, by name. The app's Streamlit internals are
in :mod:`attention_viz.ui.internals`.

What the core reads of transformers is public: ``output_attentions=True``, ``register_forward_hook`` on the
attention module each family adapter names (``models/families/``), ``transformers.utils.logging``. The
attention modules' return value, ``(output, weights)``, is checked for every family by the extraction tests
(the fast path against the reference, bit for bit).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

# --- plotly: a figure without validation ----------------------------------------------------------------------
# ``go.Figure(data, layout)`` validates every property of every trace and of the layout, which was most of
# the time a head change spent building a map (benchmarks/README.md). ``BaseFigure.__init__`` takes a private
# ``_validate`` flag that skips it; the figure functions (attention_viz/figures/) build all their figures
# through :func:`unvalidated_figure`, and tests/test_figure_validity.py rebuilds each with validation on.
# What breaks it: plotly dropping or renaming the flag (a TypeError, or every figure validated again:
# correct, only slower). The test checks that the flag is still accepted and still skips validation.
PLOTLY_NO_VALIDATION = {"_validate": False}


def unvalidated_figure(data: Sequence[dict], layout: dict) -> go.Figure:
    """``go.Figure(data, layout)`` without plotly's property validation (trace dicts with ``"type"``)."""
    return go.Figure(data=list(data), layout=layout, **PLOTLY_NO_VALIDATION)
