"""The view as a link: the "link to this view" box and the notes about a link that was opened.

A small link button (its icon alone) beside the Language choice opens it, in view without scrolling on a projector's
1280 × 720 screen and taking no row of the sidebar. The link is shown on one line with ``st.code`` (it scrolls sideways
instead of wrapping over 25 lines), whose copy button (at the right end of that line) puts it on the
clipboard: Streamlit has no clipboard API of its own, and browsers allow the clipboard only on ``localhost``
or ``https``; elsewhere the text is still selectable. The box is drawn only while its popover is open:
``st.code`` makes the browser load a large syntax highlighter, a good part of a first visit's time to
the first heatmap (the cold-start benchmark; figures in ``benchmarks/README.md``).
"""

from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from attention_viz import links
from attention_viz.ui import internals
from attention_viz.ui.text.i18n import t
from attention_viz.ui.text.safe_text import Markdown, literal
from attention_viz.ui.view import state
from attention_viz.ui.view.view_schema import FREE_TEXTS

SHARE_BOX = "share_box"  # the popover's key: its state says whether it is open
SHARE_LINK = "share_link"  # the container inside it (the popover's panel is drawn outside the sidebar)
SHARE_OPEN = "share_open"  # kept across pages and languages, where the expander is a new widget
# st.code shows its copy button only while the pointer is over the box: in the link box it is always shown
_COPY_BAR = f".st-key-{SHARE_LINK} {internals.CODE} div:has(> div > {internals.TOOLBAR_BUTTON})"
_COPY_SHOWN = f"{_COPY_BAR}, {_COPY_BAR} * {{ opacity: 1 !important; visibility: visible !important; }}"


def view_link(page: str) -> tuple[str, list[tuple[str, int, int]]]:
    """The link to the current view (at most :data:`links.MAX_LINK` characters), and for each text cut to fit
    in it ``(setting, characters the link holds, characters of the text)``."""
    root = state.app_root()
    params, notes = state.view_query(page, root)
    cuts = [(n.key, len(params[n.key]), len(str(st.session_state.get(n.key, "")))) for n in notes if n.kind == "cut"]
    return f"{root}/?{links.query_string(params)}", cuts


def _remember_open() -> None:
    """Streamlit makes the popover a new (closed) widget on another page or in another language."""
    st.session_state[SHARE_OPEN] = bool(st.session_state[SHARE_BOX])


def opened_link(slot: DeltaGenerator) -> None:
    """Tell, once, what was wrong with the opened link: the settings it could not read and those the app
    had to change (after the page ran, which may change some), named literally, in ``slot``."""
    if not state.link_pending():
        return
    notes = state.link_notes()
    dropped = sorted({key for kind, key in notes if kind != "cut"})
    with slot.container():
        if dropped:
            st.warning(t("links.opened_invalid", names=Markdown(", ").join(dropped)))
        if any(kind == "cut" for kind, _ in notes):
            st.warning(t("links.opened_cut", limit=links.MAX_TEXT))


def link_box(page: str, place: DeltaGenerator | None = None) -> DeltaGenerator:
    """Offer the link to this view: a small button (in ``place``, beside the Language choice; default the end
    of the sidebar) that opens the link on one line with its copy button. Return the place, at the top of
    the page, for the note about an opened link (:func:`opened_link`, called once the page ran)."""
    slot = st.empty()
    url, cuts = view_link(page)
    box = (place or st.sidebar).popover(
        ":material/link:",  # the icon alone: it fits beside the Language choice in either language
        help=t("links.share"),
        key=SHARE_BOX,
        on_change=_remember_open,
    )
    if box.open:
        inside = box.container(key=SHARE_LINK)
        inside.html(f"<style>{_COPY_SHOWN}</style>")
        inside.markdown(f"**{t('links.share')}**")
        inside.code(url, language=None, wrap_lines=False)  # one line; its copy button at the right end
        for key, kept, total in cuts:  # under the link, in view on an 800 × 600 screen: the hint can wait
            field = t(f"links.field_{key}") if key in FREE_TEXTS else literal(key)
            inside.warning(t("links.text_cut", field=field, limit=links.MAX_LINK, kept=kept, total=total))
        inside.caption(t("links.copy_hint"))
    return slot
