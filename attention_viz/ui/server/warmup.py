"""A cold start: the server imports torch and transformers and loads the model before a browser asks.

The cold-start benchmark (``benchmarks/server.py``, figures in ``benchmarks/README.md``) measures both:

- The imports of torch, transformers and the app and the bundled model (most of it importing transformers'
  modelling code): :func:`preload`, started by ``app.py`` through ``st.App``'s lifespan as the server
  starts, does them in a background thread, not in the first browser session's run; a session waits for
  what is not done yet. A browser opened a while after the server shows its first map in less than half the
  time it would take if the first session did them. One opened at once gains nothing: the server's Python
  work (the imports, serving the page, the first run) runs one thread at a time under the GIL, whichever
  thread starts it.
- The example a new session opens on (:data:`attention_viz.ui.view.view_schema.OPENING`, on Compare) is
  computed once here too (:func:`opening`): its pretrained and from-scratch attention and their parity go
  into the caches every session reads, so not even the first student's first run runs the model.
- Nothing warms Streamlit's own plotly.js (fetched and parsed when the first Streamlit chart arrives):
  Compare's map and charts use the app's own copy, which the page loads once the map has painted
  (``attention_viz/ui/attention_map/plotly_loader.js``), so an empty Streamlit chart sent during a cold start would
  only make the first visit load a second copy.

No figure may be built while numpy or pandas is half-imported: plotly looks them up in ``sys.modules``
(``AttributeError: partially initialized module 'numpy'``, found by the load test). So the preload
imports them and plotly whole first, under a lock; and a session that finds no preload (AppTest, or the
app run other than by ``streamlit run app.py``) imports the app's modules under that same lock
(:func:`importing`).

This module imports nothing heavy; the preload imports the rest.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from collections.abc import AsyncIterator, Iterator

from attention_viz.ui import internals

# Imported whole before any figure is built; quick even cold.
FIGURE_MODULES = ("numpy", "pandas", "plotly.graph_objects", "plotly.io")
# What the app's first run imports: torch and transformers come with the first three (seconds when cold);
# the figures, and Streamlit's emoji table (the first st.success or st.info looks for a leading emoji).
APP_MODULES = (
    "attention_viz.ui.shared.controls",
    "attention_viz.ui.shared.presets_ui",
    "attention_viz.ui.view.sharing",
    "attention_viz.figures",
    "streamlit.emojis",
)

_LOCK = threading.Lock()
_log = logging.getLogger("attention_viz")
_THREAD_NAME = "attention_viz-preload"


def _not_from_the_preload(record: logging.LogRecord) -> bool:
    """Streamlit warns of a missing ScriptRunContext when a cached function runs outside a script run,
    as the preload's model load does on purpose; other threads' warnings stay."""
    return record.threadName != _THREAD_NAME


internals.quiet_missing_context(_not_from_the_preload)


class _Preload:
    """The background start: ``imported`` once the app's modules are, ``done`` once the model is loaded too
    (or the preload failed: a session then does the work itself and reports any error as usual)."""

    def __init__(self) -> None:
        self.imported = threading.Event()
        self.done = threading.Event()
        self.ready = threading.Event()  # the bundled model is loaded (and the opening example computed)
        self.thread = threading.Thread(target=self._run, name=_THREAD_NAME, daemon=True)

    def _run(self) -> None:
        try:
            with _LOCK:
                for name in FIGURE_MODULES:
                    importlib.import_module(name)
            for name in APP_MODULES:
                importlib.import_module(name)
            self.imported.set()
            from attention_viz.models.loading import BUNDLED_MODEL, ModelLoadError
            from attention_viz.ui.server import cache

            # Into the cache every session reads. A ModelLoadError is cached too: the first session shows it
            # with the app's message and logs it in one line, so it is not logged here.
            with contextlib.suppress(ModelLoadError):
                loaded = cache.model(BUNDLED_MODEL)
                try:
                    opening(loaded)
                except Exception:  # the model loaded: maps can be drawn; a session reports this as usual
                    _log.exception("computing the opening example failed; the first session will try again")
                self.ready.set()
        except Exception:  # unexpected: a session meets it again and reports it as the app does
            _log.exception("preloading failed; the first session will try again")
        finally:
            self.imported.set()
            self.done.set()


def opening(loaded: object) -> None:
    """Compute what Compare shows for the opening example with ``loaded`` (a ``LoadedModel``), into the caches
    every session reads (:mod:`attention_viz.ui.server.cache`): the pretrained attention, the from-scratch attention
    with the default variant and seed, and their parity. Takes a forward of each encoder (about 0.1 s on one
    core for the bundled model); a session then finds them all cached.

    Raises what :mod:`attention_viz.ui.server.cache` raises (``InputError`` for an example over the operator's
    limits)."""
    from attention_viz.ui.server import cache
    from attention_viz.ui.view.view_schema import DEFAULTS, OPENING

    pair = OPENING.pair or None  # as a session asks: no second sentence is None (state.selection)
    cache.pretrained(loaded, OPENING.text, pair)
    cache.scratch(loaded, OPENING.text, pair, DEFAULTS["variant"], int(DEFAULTS["seed"]))
    cache.parity(loaded, OPENING.text, pair)
    cache.forward_estimate(loaded)  # the sidebar names it: timed once here, not in a first visit


_preload: _Preload | None = None


def preload() -> None:
    """Start importing the app's modules and loading the bundled model in a background thread (once)."""
    global _preload
    with _LOCK:
        if _preload is None:
            _preload = _Preload()
            _preload.thread.start()


@contextlib.asynccontextmanager
async def lifespan(app: object) -> AsyncIterator[None]:
    """``st.App``'s lifespan: :func:`preload` as the server starts; returns at once."""
    preload()
    yield


READY_PATH = "/ready"  # the readiness check, beside Streamlit's /_stcore/health (both under any base path)


async def readiness(request: object) -> object:
    """``GET /ready`` (``/<base>/ready`` under a base path, as ``app.py`` mounts it): 200 ``ok`` once the
    bundled model is loaded (the server can draw a map), 503 before (and for good if it failed to load).
    Streamlit's ``/_stcore/health`` answers soon after the start, long
    before the model is loaded; a proxy or a replica setup sends browsers only to a replica that answers here."""
    from starlette.responses import PlainTextResponse

    if _preload is not None and _preload.ready.is_set():
        return PlainTextResponse("ok")
    state = "failed" if _preload is not None and _preload.done.is_set() else "loading"
    return PlainTextResponse(f"not ready: the model is {state}", status_code=503, headers={"Retry-After": "1"})


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """Hold around the app's heavy imports: waits for the preload's imports if one runs, and keeps another
    session from importing them at the same time."""
    if _preload is not None:
        _preload.imported.wait()
    with _LOCK:
        yield
