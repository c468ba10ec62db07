"""Messages for the user instead of tracebacks: bad input, failed extraction, truncation."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from attention_viz.extraction import AttentionError, Encoding, InputError

T = TypeVar("T")


def escape_markdown(text: str) -> str:
    """Show ``text`` literally in Streamlit's Markdown (a typed model name is not a link or a formula)."""
    return re.sub(r"([\\`*_{}\[\]()<>#+\-.!|~$])", r"\\\1", text)


def or_stop(compute: Callable[..., T], *args) -> T:
    """Run ``compute``; on bad input or invalid attention show why and stop this page's run."""
    try:
        return compute(*args)
    except InputError as exc:
        st.info(f"{str(exc).capitalize()}. Your text is kept in the sidebar.")
    except AttentionError as exc:
        st.error(str(exc).capitalize())
    st.stop()


def truncation(encoding: Encoding) -> None:
    """Say when the input was cut to the model's maximum length (case C03)."""
    if encoding.truncated:
        st.warning(
            f"{encoding.num_input_tokens} tokens, cut to {encoding.num_tokens} (the model's maximum): "
            "the end of the input is not shown."
        )
