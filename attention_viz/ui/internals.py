"""Every place the app leans on a Streamlit internal, or tunes the process, in one module.

Each entry says why it is used and what breaks it; ``tests/test_internals.py`` checks each against the
installed Streamlit (checked with 1.67), so an upgrade that changes one fails there, by name, instead of
somewhere in a page. Pages and helpers import the names below and nothing of Streamlit's own internals.

The core's one library internal (plotly's ``_validate=False``) is in :mod:`attention_viz.internals`,
which imports no Streamlit. Not internals, and so not here: ``.st-key-<key>`` CSS classes (Streamlit
documents them for keyed elements), ``st.components.v2``, ``st.App`` and its routes and middleware.

This module imports nothing heavy: ``app.py`` calls :func:`sleep_waiting_threads` before torch is imported.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import logging
import os

# --- Streamlit's DOM: test ids and class names ------------------------------------------------------------
# Streamlit's front end marks its elements with ``data-testid`` attributes (for its own tests) and a few
# class names; no public CSS API reaches them. The frame (ui/frame/screen.py) uses them for the main area's
# margins, the sidebar's spacing, columns that stack in a narrow main area and Presentation's see-through
# header. What breaks it: a renamed or dropped test id or class. The page still works, with Streamlit's
# default spacing (no error anywhere), so the test looks for each name in Streamlit's built front end.
MAIN = '[data-testid="stMain"]'  # the scrolling main area
MAIN_BLOCK = ".stMainBlockContainer"  # the main area's content box (its padding)
SIDEBAR = '[data-testid="stSidebar"]'
SIDEBAR_CONTENT = '[data-testid="stSidebarUserContent"]'  # the sidebar below the navigation
SIDEBAR_NAV = '[data-testid="stSidebarNav"]'
SIDEBAR_HEADER = '[data-testid="stSidebarHeader"]'  # above the navigation: the collapse button's row
SIDEBAR_COLLAPSE_BUTTON = '[data-testid="stSidebarCollapseButton"] button'
EXPAND_SIDEBAR_BUTTON = '[data-testid="stExpandSidebarButton"]'  # the header's », there while the sidebar is closed
HEADER = 'header[data-testid="stHeader"]'
HORIZONTAL_BLOCK = '[data-testid="stHorizontalBlock"]'  # the row of an st.columns
COLUMN = '[data-testid="stColumn"]'
CODE = '[data-testid="stCode"]'  # an st.code box (the link box keeps its copy button shown)
TOOLBAR_BUTTON = '[data-testid="stElementToolbarButton"]'  # a button of an element's hover toolbar
# st.pills and st.segmented_control: their options sit in one row that scrolls sideways, so in a narrow main area
# the last ones are cut at its edge; the frame lets the row wrap instead.
BUTTON_GROUP = '[data-testid="stButtonGroup"]'
# The same names in the map element's own script (attention_viz/ui/attention_map/attention_map.js), which
# collapses the sidebar for Presentation on a narrow screen; the test checks the script uses these only.
MAP_SCRIPT_SELECTORS = (SIDEBAR, SIDEBAR_COLLAPSE_BUTTON)
TEST_IDS = (
    "stMain",
    "stSidebar",
    "stSidebarUserContent",
    "stSidebarNav",
    "stSidebarHeader",
    "stSidebarCollapseButton",
    "stExpandSidebarButton",
)
TEST_IDS += ("stHeader", "stHorizontalBlock", "stColumn", "stCode", "stElementToolbarButton", "stPlotlyChart")
TEST_IDS += ("stButtonGroup",)
CLASS_NAMES = ("stMainBlockContainer",)

# --- plotly.js's DOM in the map element's script ------------------------------------------------------------
# plotly.js draws a figure as layers inside its ``.svg-container``: first the plot's SVG (the heatmap, axes,
# tick labels), then an SVG of the colour bar and annotations, the toolbar (modebar) and an SVG of the hover
# label. The map's script (attention_map.js, ``placeCanvas``) puts its cell canvas right after the first
# layer, so that the hover label, the colour bar and the toolbar draw over the cells; laid over the whole
# figure, the canvas hid the hover label. No public plotly API orders a foreign element among its layers.
# What breaks it: plotly renaming the classes or reordering its layers; the canvas then stays over the figure
# and the hover label is hidden again (tests/test_browser_map.py reads it in pixels). The test checks the
# names in the plotly.js the app serves and that the script uses these selectors only.
PLOTLY_MAP_SCRIPT_SELECTORS = (".svg-container > svg.main-svg",)
PLOTLY_CLASS_NAMES = ("svg-container", "main-svg")

# --- Streamlit's plotly charts: an SVG button in their toolbars -----------------------------------------------
# ``st.plotly_chart`` takes plotly's config as JSON, so no button with a click function reaches its toolbar
# (plotly's modebar) through it. A page-wide element (attention_map/svg_buttons.js, drawn by
# :func:`attention_viz.ui.attention_map.components.svg_buttons`) finds each chart Streamlit draws (``chart``: its
# test id and plotly's graph div), puts into its toolbar (``modebar``), after the first group (the camera's), a
# group (``group``) with a button (``button``, its icon ``icon``) made as plotly makes its own (plotly's CSS
# shows it on hover with a tooltip from ``data-title``), and on a click saves the chart with the app's plotly.js
# (``Plotly.downloadImage`` on that graph div: plotly reads the div's ``data``, ``layout``, ``_context`` and
# ``_fullLayout``). The file is named from ``gd._context.toImageButtonOptions.filename``, the config the
# camera reads for the PNG; the icon takes the toolbar's colours from ``gd._fullLayout.modebar``.
# What breaks it: a renamed test id or plotly class (no button; the page is otherwise as before), or
# Streamlit's plotly.js and the app's disagreeing on those fields of the graph div (a wrong or no file).
# The test checks each name in Streamlit's build and in its plotly.js (its plotly chart chunk), the script
# against this table, and tests/test_browser_map.py saves an SVG from two pages.
SVG_BUTTON_DOM = {
    "chart": '[data-testid="stPlotlyChart"] .js-plotly-plot',
    "modebar": ".modebar",
    "group": "modebar-group",
    "button": "modebar-btn",
    "icon": "icon",
}
PLOTLY_CHART_FIELDS = ("_context.toImageButtonOptions", "_fullLayout.modebar")  # the graph div's, as above

# --- Streamlit's logger of a missing script-run context -----------------------------------------------------
# A cached function run outside a script run (the server's preload of the model, ui/server/warmup.py; the
# benchmarks' AppTest loops) makes Streamlit warn "missing ScriptRunContext" through this module logger.
# The warning is expected there, so a filter drops it for the preload's thread. What breaks it: the module
# moved or its logger renamed; the warning then shows once per cold start (harmless, but noise).
SCRIPT_RUN_CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


def quiet_missing_context(keep: logging.Filter | None = None) -> logging.Logger:
    """The logger of Streamlit's "missing ScriptRunContext" warning, with ``keep`` added as its filter
    (or, without one, set to errors only)."""
    logger = logging.getLogger(SCRIPT_RUN_CONTEXT_LOGGER)
    if keep is None:
        logger.setLevel(logging.ERROR)
    else:
        logger.addFilter(keep)
    return logger


# --- Whether a run is the browser's Back or Forward -------------------------------------------------------------
# Streamlit's front end asks for a run on the browser's popstate with ``is_history_navigation`` set (its
# ClientState), and the server keeps that flag on the run's context. The app reads it so that Back and Forward
# go to the view the address they reached names, over the steps the map made in the browser (reported in a
# hidden box whose last report the run also carries) and over the widgets' values the front end still holds.
# Nothing else tells such a run apart: Streamlit sends its own copy of the address with every other run, the
# one the server last wrote, which Back reaches when the steps since then were the browser's alone; and a
# listener of the app's own on popstate runs after Streamlit's, which is registered first (at the window,
# listeners run in the order they were added). What breaks it: the attribute renamed or moved (Back then
# keeps the steps' view when it reaches the address the server last wrote); the test checks that the
# context's dataclass and the ClientState message still have it.
HISTORY_NAVIGATION_FIELD = "is_history_navigation"


def history_navigation() -> bool:
    """Whether this script run was asked for by the browser's Back or Forward (False outside a run)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return bool(getattr(ctx, HISTORY_NAVIGATION_FIELD, False))


# --- What makes a keyed widget a new one ---------------------------------------------------------------------
# Streamlit 1.67 tells a keyed widget apart by its key and a few value-shaping arguments (a slider's range,
# ``key_as_main_identity`` in its source); a widget with a changed one starts from its default. The widget
# protocol (ui/view/widgets.py ``control``) writes the setting into a widget that is new in this sense, and
# otherwise only when the setting changed. What breaks it: Streamlit counting another argument the app
# passes; that widget would then jump back to its default after that argument changes.
WIDGET_IDENTITY = ("min_value", "max_value", "step", "max_selections", "accept_new_options")
# The identity arguments of each widget the app binds through ``control``, as Streamlit's source sets them
# (True: the key alone); the test reads them back from the installed Streamlit.
WIDGET_IDENTITY_BY_MODULE = {
    "radio": True,
    "selectbox": {"accept_new_options"},
    "multiselect": {"max_selections", "accept_new_options"},
    "slider": {"min_value", "max_value", "step"},
    "number_input": True,
    "checkbox": True,  # st.toggle too
    "button_group": {"click_mode"},  # st.pills: its selection_mode, which the app never changes on one widget
}

# --- Streamlit's control flow ---------------------------------------------------------------------------------
# ``st.stop``, ``st.rerun`` and ``st.switch_page`` raise exceptions that derive from ``BaseException`` only,
# so the app's ``except Exception`` around a page (ui/frame/recovery.py, ui/view/widgets.py ``guarded``) lets them pass.
# What breaks it: one of them deriving from ``Exception``; a page's st.stop would then show the app's
# error message. The test checks the classes in ``streamlit.runtime.scriptrunner_utils.exceptions``.
CONTROL_FLOW_EXCEPTIONS = ("StopException", "RerunException")

# --- The garbage collector after each run -----------------------------------------------------------------
# Streamlit collects garbage after every script run (config ``runner.postScriptGC``, on by default); the
# app's .streamlit/config.toml turns it off, because the walk covers every session's live objects and its
# cost grew with the class (a third of the server's CPU with 60 students). Python's generational collector
# still runs as objects are made; what is alive after the first model load (torch, transformers, the app,
# the model: hundreds of thousands of objects) is frozen so that its full collections skip them.
# What breaks it: the option renamed or removed (the app's setting is then ignored with a warning, and every
# run collects again); the test reads the option and the app's config.
POST_SCRIPT_GC_OPTION = "runner.postScriptGC"


def freeze_survivors() -> None:
    """Move what is alive now into the collector's permanent generation, once per process.

    Called right after the first model load. Once only: a frozen object is never collected, and a later
    freeze would also keep other sessions' figures that happen to be alive. No collection first: it would
    walk them all once more and finds nothing to free after a load.
    """
    if not gc.get_freeze_count():
        gc.freeze()


# --- The process: OpenMP threads ----------------------------------------------------------------------------
# Read by torch's OpenMP runtime when torch is imported, so set before that (``app.py``, first thing).
# Sleeping instead of spinning while they wait: on a 2-core server shared with other sessions' work,
# spinning threads waited on each other at every operation (figures in benchmarks/README.md); on idle cores
# it costs a little. An operator's own value wins. What breaks it: torch imported before this is set.
OMP_WAIT_POLICY = ("OMP_WAIT_POLICY", "PASSIVE")


def sleep_waiting_threads() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets it (before torch is imported)."""
    os.environ.setdefault(*OMP_WAIT_POLICY)


# --- The process: the C allocator ---------------------------------------------------------------------------
# glibc's malloc raises its mapping threshold each time a large block is freed (up to 32 MiB), so the arrays of
# later runs land in its heap between long-lived blocks, where what they free stays with the process. A server's
# resident memory then grew over a class by what its runs had once used: after a class of 40 at the server
# (tests/class_load.py), 60-80 MB of the heap was free but kept. Fixing the threshold (mallopt(3), the same as the
# environment variable ``MALLOC_MMAP_THRESHOLD_``), as the app's file is read, before torch and the model: a
# block of 128 KiB or more (glibc's own first value) always gets a mapping of its own, returned to the system
# when freed. Figures in docs/classroom.md ("Memory"). An operator's own variable wins; without glibc (macOS,
# musl) nothing is set. What breaks it: a C library without ``mallopt`` or this parameter (nothing is set; memory
# grows as before); the test reads the effect back.
MALLOC_OPTIONS = {"MALLOC_MMAP_THRESHOLD_": (-3, 128 * 1024)}  # variable: (mallopt's parameter, value)


@functools.cache  # once per process: app.py's first lines run again with every session's script
def bound_allocator() -> dict[str, int]:
    """Set glibc's malloc options of :data:`MALLOC_OPTIONS` that the environment leaves unset (``app.py``, first).

    Returns:
        ``{variable: value}`` of the options set now; empty where the C library has no ``mallopt`` (not glibc).
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library, without a search for it
    except (OSError, AttributeError):
        return {}
    done = {}
    for variable, (param, value) in MALLOC_OPTIONS.items():
        if variable not in os.environ and mallopt(param, value) == 1:  # mallopt returns 1 on success
            done[variable] = value
    return done
