"""Inside a head's steps in the map element: the element's ``steps`` data (:func:`data`), naming the bundle
of every held head's steps of one query (:mod:`attention_viz.analysis.step_bundles`: what it holds, its
format), so that a head or layer step redraws them without a run of the page.

The data names the bundle by path; it is made in the request handler's thread when the browser first asks for
it, after the map's first paint (the page's run draws the server's head's steps itself and makes none; a
session's rerun names the same path, :func:`~attention_viz.ui.attention_map.bundle.memo`). Offers: :func:`data`
and the page's containers the element fills.
"""

from __future__ import annotations

from collections.abc import Callable

from attention_viz.ui.attention_map import bundle
from attention_viz.ui.attention_map.serving import ROUTE, STORE
from attention_viz.ui.text.i18n import plain

STEPS_KEY = "inside_steps"  # the session memo of the steps' bundle ids (:func:`bundle.memo`)
# The page's containers: the server's steps and parity line (for the view it knows) and the element's (for a
# view it stepped to), each pair shown one at a time by ``inside_steps.js``.
SERVER_STEPS, BROWSER_STEPS = "inside_server_steps", "inside_browser_steps"
SERVER_CHECK, BROWSER_CHECK = "inside_server_check", "inside_browser_check"


def data(
    memo_key: tuple,
    layers: tuple,
    make: Callable[[], bytes],
    server: dict,
    templates: dict,
    config: dict,
    title: dict,
) -> dict:
    """The element's ``steps`` data: the bundle's path (``memo_key``: its content; ``make``: how to make it, in
    the request handler's thread when the browser first asks: a run makes none), the page's containers, the
    server's view (``layer``, ``head``: the page drew its steps), the charts' ``templates`` (plotly figures
    by step key: each the template of its kind), the charts' plotly ``config``, and the ``title``
    (:func:`attention_viz.analysis.step_bundles.segments`)."""
    memo = bundle.memo(STEPS_KEY, memo_key, None)
    path = f"{ROUTE}/maps/{bundle.bundle_id(memo, layers, lambda: STORE.put_later(make))}"
    return {
        "bundle": path,
        "slots": {
            "server": SERVER_STEPS,
            "browser": BROWSER_STEPS,
            "server_check": SERVER_CHECK,
            "check": BROWSER_CHECK,
        },
        "server_view": server,
        "templates": {key: figure.to_json() for key, figure in templates.items()},
        "config": config,
        "distance_title": plain("inside.rope_title"),
        "title": title,
    }
