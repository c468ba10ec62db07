"""attention-viz: compare a pretrained BERT's attention heads with a from-scratch reproduction.

Run with ``streamlit run app.py``. This file has two roles:

- the script every session runs (:func:`main`): the frame, that is page config, shared controls,
  navigation, and the view in the URL (read once by ``state.init``, written back by ``state.write_url``);
- the server's entry point: ``streamlit run`` finds ``app`` below, an ``st.App``, imports this file and
  serves it. Its lifespan starts importing torch and transformers and loading the bundled model as the
  server starts, before any browser asks (:mod:`attention_viz.ui.server.warmup`).
"""

from pathlib import Path

from attention_viz.ui import internals

internals.sleep_waiting_threads()  # before torch is imported: its OpenMP threads sleep while they wait
internals.bound_allocator()  # before any thread or array: freed memory goes back to the system

import streamlit as st  # noqa: E402

from attention_viz.ui.server import warmup  # noqa: E402

ICON = Path(__file__).resolve().parent / "assets" / "icon.png"  # served by the app itself: no font host


def main() -> None:
    """One run of the app for one session."""
    st.set_page_config(page_title="attention-viz", page_icon=str(ICON), layout="wide")
    with warmup.importing():  # waits for the preload's imports: no figure is built while numpy is half-imported
        # torch, transformers: seconds when cold
        from attention_viz.ui.attention_map import element
        from attention_viz.ui.frame import recovery, screen
        from attention_viz.ui.shared import controls, seq2seq_ui
        from attention_viz.ui.text.i18n import t
        from attention_viz.ui.view import browser_view, sharing, state

    state.init()  # before any word is drawn: the link may set the language
    screen.frame(st.session_state["presentation"])
    element.svg_buttons()  # every st.plotly_chart's toolbar: an SVG beside the PNG
    with st.sidebar:  # hidden: where the map element leaves the view it moved to, for the next run
        browser_view.draw()

    pages = {
        "compare": st.Page(
            "attention_viz/ui/pages/compare.py", title=t("app.page_compare"), icon=":material/compare:", default=True
        ),
        "all_heads": st.Page(
            "attention_viz/ui/pages/all_heads.py", title=t("app.page_all_heads"), icon=":material/grid_view:"
        ),
        "head_stats": st.Page(
            "attention_viz/ui/pages/head_stats.py", title=t("app.page_head_stats"), icon=":material/analytics:"
        ),
        "head_similarity": st.Page(
            "attention_viz/ui/pages/head_similarity.py",
            title=t("app.page_head_similarity"),
            icon=":material/scatter_plot:",
        ),
        "atlas": st.Page("attention_viz/ui/pages/atlas.py", title=t("app.page_atlas"), icon=":material/explore:"),
        "rollout": st.Page(
            "attention_viz/ui/pages/rollout.py", title=t("app.page_rollout"), icon=":material/account_tree:"
        ),
        "inside": st.Page("attention_viz/ui/pages/inside.py", title=t("app.page_inside"), icon=":material/calculate:"),
        "experiments": st.Page(
            "attention_viz/ui/pages/experiments.py", title=t("experiments.page"), icon=":material/science:"
        ),
        "article": st.Page(
            "attention_viz/ui/pages/article.py", title=t("app.page_article"), icon=":material/menu_book:"
        ),
    }
    navigation = st.navigation(list(pages.values()))
    page = next(name for name, candidate in pages.items() if candidate.url_path == navigation.url_path)
    requested = state.requested_page(tuple(pages))
    if requested and requested != page:
        st.switch_page(pages[requested])
    state.begin_run(page)
    link_note = None  # the place, at the top of the page, for the note about an opened link
    try:
        with recovery.on_error(page):  # an unexpected error: one message, the sidebar and navigation stay
            places = {}  # the link to this view beside the Language choice: in view without scrolling
            loaded = controls.sidebar(places)
            state.write_url(page)
            link_note = sharing.link_box(page, places.get("share"))
            if loaded is None:
                st.title(t("app.title"))
                st.info(t("app.model_failed"))
                st.stop()
            recovery.callback_note()
            if seq2seq_ui.is_seq2seq(loaded):  # T5, BART: the page of the chosen attention kind, or what it shows
                seq2seq_ui.page(page, loaded)
            else:
                navigation.run()
            state.settle_view(page)  # a setting the page reset to fit the text goes into the address too
    finally:  # also when the page stops early (st.stop) to show a message
        if link_note is not None:
            sharing.opened_link(link_note)  # after the page: it names the settings the page had to change too


if __name__ == "__main__":  # Streamlit runs this file as every session's script
    main()
else:  # `streamlit run app.py` imports it as a module first: the server's entry point
    import threading

    from starlette.middleware import Middleware
    from starlette.routing import Route

    from attention_viz.ui.attention_map import serving
    from attention_viz.ui.attention_map.preload_links import PreloadLinks

    # Streamlit puts these at the server's root as given; its own routes, under server.baseUrlPath (set
    # before `streamlit run` imports this file). The app's go there too (serving.py says more).
    base = st.get_option("server.baseUrlPath")
    ready = Route(serving.app_path(base, warmup.READY_PATH), warmup.readiness, methods=["GET", "HEAD"])
    routes = [ready, *serving.routes(base)]  # readiness (200 once the model is loaded); plotly.js, map bundles
    # plotly.js compressed once, now, in the background: the first browser that asks gets it at once
    threading.Thread(target=serving.plotly_gzip, name="attention_viz-plotly-gzip", daemon=True).start()
    app = st.App(__file__, lifespan=warmup.lifespan, middleware=[Middleware(PreloadLinks)], routes=routes)
