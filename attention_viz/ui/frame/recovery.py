"""No error page: an unexpected error shows one message in the user's language, and the app stays usable.

Streamlit replaces a page that raises with its own English box (and hides the rest of the run); here
the page's error is caught around the page's run, logged with its traceback, and told in one
sentence with a way on. The sidebar and the navigation were drawn before the page, so every control
still works. Streamlit's own control flow (``st.stop``, ``st.rerun``, ``st.switch_page``) passes through:
it raises ``BaseException`` subclasses, which ``except Exception`` does not catch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import streamlit as st

from attention_viz.ui.text.i18n import t
from attention_viz.ui.view import state

_log = logging.getLogger("attention_viz")
COMPARE = "attention_viz/ui/pages/compare.py"


@contextlib.contextmanager
def on_error(page: str) -> Iterator[None]:
    """Run the page inside: an exception is logged and shown as one translated message with a way on."""
    try:
        yield
    except Exception:
        _log.exception("page %r failed", page)
        st.warning(t("app.page_failed"), icon=":material/sentiment_dissatisfied:")
        if page != "compare":
            st.page_link(COMPARE, label=t("app.page_failed_compare"), icon=":material/arrow_forward:")


def callback_note() -> None:
    """Say once that the last click could not be applied (a widget callback failed; see :func:`state.guarded`)."""
    if state.callback_failed():
        st.warning(t("app.callback_failed"), icon=":material/sentiment_dissatisfied:")
