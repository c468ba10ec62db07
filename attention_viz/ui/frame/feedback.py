"""Messages for the user instead of tracebacks: bad input, failed extraction, a model that did not load, truncation.

The user sees one translated sentence (``messages.*`` in the locale tables); the server log keeps the
library's details. Anything from outside (typed text, a model name, a library's detail) is shown with
:func:`literal`, so it is never read as Markdown (a link, a formula) and keeps its backslashes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from attention_viz.extraction import AttentionError, Encoding, InputError
from attention_viz.models.loading import ModelLoadError
from attention_viz.ui.server import app_settings
from attention_viz.ui.text.i18n import DEFAULT_LANGUAGE, t, table
from attention_viz.ui.text.safe_text import Markdown, literal  # noqa: F401 (feedback.literal: outside text, shown as is)

T = TypeVar("T")
log = logging.getLogger("attention_viz")


def input_message(exc: InputError) -> Markdown:
    """The translated sentence for a refused input."""
    if exc.code == "empty":
        return t("messages.input_empty")
    if exc.code == "corpus_too_large":
        fields = exc.fields
        what = t(f"messages.corpus_{fields['what']}")
        return t("messages.input_corpus_too_large", what=what, **{k: v for k, v in fields.items() if k != "what"})
    if exc.code == "too_long":
        which = t(f"messages.input_which_{exc.fields['which']}")
        return t(
            "messages.input_too_long", which=which, chars=f"{exc.fields['chars']:,}", limit=f"{exc.fields['limit']:,}"
        )
    if f"messages.input_{exc.code}" in table(DEFAULT_LANGUAGE):  # any other refusal with its own sentence
        return t(f"messages.input_{exc.code}", **exc.fields)
    return t("messages.input_invalid")


def model_message(exc: ModelLoadError, previous: str) -> Markdown:
    """The translated sentence for a model that did not load, naming the one still shown."""
    reason = t(f"messages.model_{exc.code}", **{k: v for k, v in exc.fields.items() if k != "name"})
    reason += Markdown(" ") + t("messages.model_detail")
    return t("messages.model_failed", name=exc.fields.get("name", ""), reason=reason, previous=previous)


def settings_problem() -> None:
    """Say in the main area that a server setting is invalid and the defaults are used (the log says which)."""
    if app_settings.settings_problem() is not None:
        st.error(t("messages.settings_invalid"), icon=":material/settings:")


def model_failed(exc: ModelLoadError, previous: str) -> None:
    """Say in the main area that a model did not load and which one is still shown; log the details."""
    log.warning("model %r did not load (%s): %s", exc.fields.get("name"), exc.code, exc)
    st.error(model_message(exc, previous), icon=":material/error:")


def or_stop(compute: Callable[..., T], *args) -> T:
    """Run ``compute``; on bad input or invalid attention show why and stop this page's run."""
    try:
        return compute(*args)
    except InputError as exc:
        st.info(input_message(exc))
    except AttentionError as exc:
        log.error("invalid attention: %s", exc)
        st.error(t("messages.attention_invalid"))
    st.stop()


def truncation_message(encoding: Encoding) -> Markdown | None:
    """Which sentence was cut and by how many tokens (``longest_first``); ``None`` if nothing was."""
    if not encoding.truncated:
        return None
    total = t("messages.truncated", total=encoding.num_input_tokens, kept=encoding.num_tokens)
    cut_text, cut_pair = encoding.cut
    if cut_pair:
        return total + Markdown(" ") + t("messages.truncated_pair", cut_text=cut_text, cut_pair=cut_pair)
    return total + Markdown(" ") + t("messages.truncated_text", cut=cut_text)


def truncation(encoding: Encoding) -> None:
    """Say when the input was cut to the model's maximum length, and when a model with one
    token type read a sentence pair as one segment."""
    message = truncation_message(encoding)
    if message:
        st.warning(message)
    if encoding.one_segment:
        st.caption(t("messages.one_segment"))
