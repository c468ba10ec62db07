"""Take every screenshot the documentation shows, from the running app.

    .venv/bin/python docs/screenshots.py            # all of them, into docs/img/
    .venv/bin/python docs/screenshots.py compare    # only those whose file name starts with "compare"

It starts ``streamlit run app.py`` on a free loopback port and drives Debian's chromium through playwright
(``tests/browser.py``: ``executable_path=shutil.which("chromium")``; never ``playwright install``). Each shot
opens a new session at the address of one view (the app's links: ``?page=...`` and the view's settings),
waits until the page's script has stopped running and its charts have stopped moving, and saves the window
(not the whole page) as a PNG. ``tests/test_docs.py`` checks that every image the docs show is listed here.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
IMAGES = Path(__file__).resolve().parent / "img"


@dataclass(frozen=True)
class Shot:
    """One screenshot: ``file`` in docs/img/, the view's link ``query``, the window in CSS pixels and, if
    given, an element scrolled into view first (a CSS selector: the sidebar's generation step)."""

    file: str
    query: str
    width: int = 1280
    height: int = 720
    scroll: str | None = None


GENERATION = "&generate_tokens=6&generated=6&generation_step=4"
STEPS = ".st-key-generation_steps"  # the sidebar's generation step, scrolled into view
SHOTS = (
    Shot("compare.png", "?page=compare"),
    Shot("compare-800x600.png", "?page=compare", 800, 600),
    Shot("presentation.png", "?page=compare&presentation=1"),
    Shot("presentation-800x600.png", "?page=compare&presentation=1", 800, 600),
    Shot("all_heads.png", "?page=all_heads"),
    Shot("head_stats.png", "?page=head_stats"),
    Shot("head_similarity.png", "?page=head_similarity"),
    Shot("atlas.png", "?page=atlas"),
    Shot("rollout.png", "?page=rollout"),
    Shot("inside.png", "?page=inside"),
    Shot("experiments.png", "?page=experiments"),
    Shot("article.png", "?page=article"),
    # A decoder's continuation: {decoder} is a tiny random GPT-2 saved with its LM head, built here offline.
    Shot(
        "compare-generation.png",
        "?page=compare&model={decoder}&text=The cat sat on the mat.&layer=1&head=0" + GENERATION,
        scroll=STEPS,
    ),
    Shot(
        "compare-generation-800x600.png",
        "?page=compare&model={decoder}&text=The cat sat on the mat." + GENERATION,
        800,
        600,
        STEPS,
    ),
    # An encoder–decoder: a tiny random T5 built offline (tests/tiny_seq2seq.py) into a temporary folder, {t5}.
    Shot(
        "compare-t5-cross.png",
        "?page=compare&model={t5}&attention_kind=cross&layer=1&head=2"
        "&text=Where+is+it%3F+It+is+in+the+box.&target=It+was+tired.",
    ),
    Shot(
        "inside-t5-cross.png",
        "?page=inside&model={t5}&attention_kind=cross&layer=1&head=2&inside_query=2"
        "&text=Where+is+it%3F+It+is+in+the+box.&target=It+was+tired.",
    ),
)


def decoder_folder() -> str:
    """A tiny random GPT-2 saved with its LM head (``tests/test_lm_head.py``), in a temporary folder."""
    import tempfile

    from test_lm_head import _save_lm

    return _save_lm("gpt2", tempfile.mkdtemp(prefix="screenshot-gpt2-"))


def take(page_factory, url: str, shot: Shot, decoder: str | None = None) -> Path:
    """Open ``shot``'s view in a new page and save what the window shows; return the file."""
    from urllib.parse import quote

    from browser import idle, settled

    page = page_factory(viewport={"width": shot.width, "height": shot.height})
    try:
        query = shot.query.replace("{decoder}", quote(decoder or "", safe="")).replace(" ", "%20")
        page.goto(f"{url}/{query}")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
        idle(page, timeout_ms=180_000)
        settled(page, ".js-plotly-plot", timeout_ms=120_000)
        if shot.scroll:
            page.locator(shot.scroll).scroll_into_view_if_needed()
        page.mouse.move(shot.width - 5, shot.height - 5)  # no hover label over a chart
        time.sleep(0.5)  # a hover label fading out
        path = IMAGES / shot.file
        page.screenshot(path=path)
        return path
    finally:
        page.close()


def main(argv: list[str]) -> int:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]  # the tests' builders, which use benchmarks/' tokenizers
    from browser import CHROMIUM_ARGS, chromium_path, streamlit_server
    from playwright.sync_api import sync_playwright

    chosen = [shot for shot in SHOTS if not argv or any(shot.file.startswith(prefix) for prefix in argv)]
    IMAGES.mkdir(exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as folder,
        streamlit_server(timeout_s=240) as running,
        sync_playwright() as playwright,
    ):
        decoder = decoder_folder() if any("{decoder}" in shot.query for shot in chosen) else None
        url = running[0]
        models = {}
        if any("{t5}" in shot.query for shot in chosen):
            from tiny_seq2seq import make_tiny_seq2seq

            models["t5"] = quote(make_tiny_seq2seq("t5", Path(folder) / "tiny-t5"), safe="")
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            for shot in chosen:
                if models:
                    shot = replace(shot, query=shot.query.replace("{t5}", models["t5"]))
                path = take(browser.new_page, url, shot, decoder)
                print(f"{path.relative_to(ROOT)}: {shot.width}×{shot.height}, {path.stat().st_size // 1024} KB")
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
