"""Messages for the user instead of tracebacks: bad input, failed extraction, truncation."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from attention_viz.extraction import AttentionError, Encoding, InputError
from attention_viz.ui.i18n import t

T = TypeVar("T")


def escape_markdown(text: str) -> str:
    """Show ``text`` literally in Streamlit's Markdown (a typed model name is not a link or a formula)."""
    return re.sub(r"([\\`*_{}\[\]()<>#+\-.!|~$])", r"\\\1", text)


def or_stop(compute: Callable[..., T], *args) -> T:
    """Run ``compute``; on bad input or invalid attention show why and stop this page's run."""
    try:
        return compute(*args)
    except InputError as exc:
        st.info(t("app.input_kept", message=str(exc).capitalize()))
    except AttentionError as exc:
        st.error(str(exc).capitalize())
    st.stop()


def truncation(encoding: Encoding) -> None:
    """Say when the input was cut to the model's maximum length (case C03)."""
    if encoding.truncated:
        st.warning(t("app.truncated", tokens=encoding.num_input_tokens, kept=encoding.num_tokens))
