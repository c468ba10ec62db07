"""A fresh server as a developer runs it (file watcher on, rerun on save), in headless Chromium: the first
visit while the model still loads, and a clean log when a source file changes.

This module starts a server of its own instead of the shared one of conftest.py, for two reasons: the shared
server runs without a file watcher (the lecture setting in ``.streamlit/config.toml``), and it has served
other tests' sessions, while the first visit here must reach a server whose preload is still running.
"""

import shutil

import pytest
from browser import IDLE, MAP_DRAWN, ROOT, streamlit_server
from playwright.sync_api import expect

# The developer options for live reload (docs/getting-started.md).
LIVE_RELOAD = ("--server.fileWatcherType", "auto", "--server.runOnSave", "true")
# Appended to the running app's copy of app.py: the session shows it once it has rerun with the new source.
CHANGED = "Source changed while the server runs."
CHANGE = f'\n\nif __name__ == "__main__":\n    st.caption("{CHANGED}")\n'
# Whether a Streamlit plotly chart (Streamlit's own plotly.js) was ever on the page, from its first byte on.
SEE_STREAMLIT_CHART = """
window.__streamlitChart = false;
new MutationObserver(() => {
    if (document.querySelector('[data-testid="stPlotlyChart"]')) window.__streamlitChart = true;
}).observe(document, {childList: true, subtree: true});
"""


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    """``streamlit run app.py`` with the file watcher on, in a folder of its own: a copy of ``app.py`` (the
    file the test changes) beside links to the package, the assets, the repository's settings and its
    ``pyproject.toml`` (where Streamlit finds the map element's declaration: beside the package it imports)."""
    folder = tmp_path_factory.mktemp("live")
    shutil.copy(ROOT / "app.py", folder / "app.py")
    for name in ("attention_viz", "assets", ".streamlit", "pyproject.toml"):
        (folder / name).symlink_to(ROOT / name, target_is_directory=(ROOT / name).is_dir())
    with streamlit_server(*LIVE_RELOAD, cwd=folder) as running:
        yield running, folder / "app.py"


@pytest.fixture(scope="module")
def first_visit(live_server, chromium):
    """The server's first session, opened as soon as it answers: ``(page, what its first run left)``."""
    (url, _, _), _ = live_server
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.add_init_script(SEE_STREAMLIT_CHART)
    page.goto(url)
    page.wait_for_selector(MAP_DRAWN, timeout=120_000)
    page.wait_for_selector(IDLE, timeout=120_000)
    left = {
        "streamlit_chart": page.evaluate("window.__streamlitChart"),
        "charts": page.locator(".js-plotly-plot").count(),
    }
    yield page, left
    page.close()


def test_a_first_visit_draws_no_streamlit_chart_beside_the_map(first_visit):
    """The server's first visit (while it may still load the model) gets Compare's map and line view drawn
    with the app's one plotly.js, and never a Streamlit chart, which would load a second copy."""
    _, left = first_visit
    assert (left["streamlit_chart"], left["charts"]) == (False, 2)  # the map and the line view, nothing more


def test_log_is_clean_at_start_and_when_a_source_file_changes(live_server, first_visit):
    """An app that imports torch once made Streamlit's file watcher log a traceback about ``torch.classes``
    when it walked the loaded modules. With the watcher on, a change to ``app.py`` reruns the open session
    (it shows what the change added, so the watcher did see it), and the log has no traceback, error or
    inotify complaint."""
    (_, log, _), app = live_server
    page, _ = first_visit
    app.write_text(app.read_text() + CHANGE)
    expect(page.get_by_text(CHANGED)).to_be_visible(timeout=90_000)  # rerun with the new source
    page.wait_for_selector(IDLE, timeout=90_000)
    text = log.read_text()
    assert "You can now view your Streamlit app" in text
    for noise in ("Traceback", "torch.classes", "Error", "Inotify"):
        assert noise not in text, text
