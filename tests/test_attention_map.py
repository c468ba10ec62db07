"""The map element's Python side: its bundles (store, inline, neighbours; their format: test_bundles.py), the
view it accepts from the browser, and the figure it reads back for AppTest."""

import asyncio
import gzip
import json

import numpy as np
import pytest
from apptools import _drawn, chart, no_errors, run_app, title
from replay import browser_report, browser_step, element_state, map_data, replay

from attention_viz import analysis, figures
from attention_viz.extraction import extract
from attention_viz.figures import bundles
from attention_viz.ui.attention_map import apptest_view, bundle, components, element, serving
from attention_viz.ui.frame import screen
from attention_viz.ui.view import state


def test_the_store_gives_a_bundle_back_by_id_and_drops_the_oldest_past_its_budget():
    store = serving._Store(budget=10)
    first = store.put(b"123456")
    assert store.put(b"123456") == first and store.get(first) == b"123456"  # the same content: the same id
    second = store.put(b"abcdef")
    assert first not in store and store.get(second) == b"abcdef" and store.get("guess") is None


def test_a_bundle_registered_ahead_is_made_once_on_its_first_request_and_can_be_forgotten():
    store = serving._Store(budget=100)
    calls = []
    later = store.put_later(lambda: calls.append(1) or b"made")
    assert later in store and calls == []  # nothing made yet
    assert store.get(later) == b"made" and store.get(later) == b"made" and calls == [1]
    other = store.put_later(lambda: b"never")
    store.forget(other)
    store.forget(later)  # made already: kept
    assert other not in store and store.get(later) == b"made"


def _get(app, path: str, request_headers: list | None = None, sent: list | None = None) -> tuple[int, bytes, bytes]:
    """``GET path`` from the ASGI ``app``, in this thread, with ``request_headers`` (``(name, value)`` bytes):
    ``(status, content type, body)``; ``sent``, if given, gets the response's ASGI messages."""
    sent, done = [] if sent is None else sent, None
    requests = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():  # the request, then a disconnect once the whole response is sent
        if requests:
            return requests.pop()
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    async def run():
        nonlocal done
        done = asyncio.Event()
        await app(scope, receive, send)

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b""}
    scope |= {"headers": request_headers or [], "scheme": "http", "server": ("127.0.0.1", 80), "root_path": ""}
    scope["http_version"] = "1.1"
    asyncio.run(run())
    headers = dict(sent[0]["headers"])
    return sent[0]["status"], headers.get(b"content-type", b""), b"".join(m.get("body", b"") for m in sent[1:])


@pytest.mark.parametrize("base", ["attviz", "/attviz/", "dept/attviz"])
def test_the_apps_routes_sit_under_the_base_path_and_a_missing_file_is_404(base):
    """``st.App`` mounts the routes exactly as given, at the server's root: under ``--server.baseUrlPath``
    they must carry it themselves. Any other path under ``attention-viz/`` is 404, not the front end's page."""
    from starlette.applications import Starlette

    app = Starlette(routes=serving.routes(base))
    prefix = "/" + base.strip("/")
    bundle_id = serving.STORE.put(b"AVM1 test bundle")
    status, kind, body = _get(app, f"{prefix}/{serving.PLOTLY_PATH}")
    assert (status, kind.split(b";")[0]) == (200, b"text/javascript") and body == serving.PLOTLY_JS.read_bytes()
    assert _get(app, f"{prefix}/{serving.ROUTE}/maps/{bundle_id}")[::2] == (200, b"AVM1 test bundle")
    assert _get(app, f"{prefix}/{serving.ROUTE}/maps/made-up")[0] == 404
    assert _get(app, f"{prefix}/{serving.ROUTE}/plotly-0.0.0.min.js")[0] == 404
    assert _get(app, f"{prefix}/{serving.ROUTE}/")[0] == 404
    assert _get(app, f"/{serving.PLOTLY_PATH}")[0] == 404  # not at the root: that is another site's
    assert serving.app_path(base, "/ready") == f"{prefix}/ready" and serving.app_path("", "ready") == "/ready"
    assert serving.app_path(None, serving.PLOTLY_PATH) == f"/{serving.PLOTLY_PATH}"


def test_plotly_js_is_compressed_once_and_passed_on_by_the_servers_gzip():
    """A browser that accepts gzip gets the bytes compressed once per process, which the server's gzip middleware
    (Streamlit wraps the app in one) passes on untouched; one that does not gets the file. Either way the
    browser ends with plotly.min.js itself."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.gzip import GZipMiddleware

    app = Starlette(routes=serving.routes(""), middleware=[Middleware(GZipMiddleware, minimum_size=500)])
    original = serving.PLOTLY_JS.read_bytes()
    for accept in (b"gzip, deflate, br", b"br;q=1, gzip;q=0.5"):
        sent = []
        status, kind, body = _get(app, f"/{serving.PLOTLY_PATH}", [(b"accept-encoding", accept)], sent)
        headers = dict(sent[0]["headers"])
        assert (status, kind.split(b";")[0], headers[b"content-encoding"]) == (200, b"text/javascript", b"gzip")
        assert body == serving.plotly_gzip()  # the bytes compressed once, not compressed again
        assert gzip.decompress(body) == original and len(body) < len(original) / 3
        assert headers[b"vary"] == b"Accept-Encoding" and b"immutable" in headers[b"cache-control"]
    for accept in ([], [(b"accept-encoding", b"gzip;q=0, identity")]):  # the middleware's own test: "gzip" in it
        sent = []
        assert _get(app, f"/{serving.PLOTLY_PATH}", accept, sent)[::2] == (200, original)
        assert dict(sent[0]["headers"])[b"content-encoding"] == b"identity"
    assert [serving.accepts_gzip(h) for h in ("GZIP", "*", "*;q=0", "gzip;q=abc", "deflate", None)] == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]


def test_plotly_js_is_compressed_once_when_many_ask_at_once(monkeypatch):
    """The server starts compressing plotly.js as it starts; a browser that asks meanwhile waits for those bytes
    instead of compressing the 4.8 MB again."""
    import threading
    import time

    made = []
    compress = gzip.compress

    def slow(data, **options):
        made.append(len(data))
        time.sleep(0.2)  # a compression long enough for the others to ask meanwhile
        return compress(data, **options)

    monkeypatch.setattr(serving, "_PLOTLY_GZIP", [])
    monkeypatch.setattr(serving.gzip, "compress", slow)
    found = []
    askers = [threading.Thread(target=lambda: found.append(serving.plotly_gzip())) for _ in range(4)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert len(made) == 1 and len(found) == 4 and all(f is found[0] for f in found)
    assert gzip.decompress(found[0]) == serving.PLOTLY_JS.read_bytes()


def test_only_a_view_of_integers_in_range_is_taken():
    good = {"layer": 5, "head": 11, "focus": -1, "query_start": 0, "key_start": 3, "seq": 9}
    assert element.valid_view(good, 6, 12, 16, 16) == {k: v for k, v in good.items() if k != "seq"}
    for bad in ({**good, "layer": 6}, {**good, "head": "1"}, {**good, "focus": True}, {**good, "key_start": -1}):
        assert element.valid_view(bad, 6, 12, 16, 16) is None
    assert element.valid_view(["not", "a", "view"], 6, 12, 16, 16) is None


def test_the_maps_report_moves_the_page_and_a_bad_one_is_ignored(bundled):
    """What the browser sends on a step (the element's state "view") becomes the page's layer and head: the
    title, the Layer and Head boxes and the map follow; a report out of range changes nothing."""
    at = run_app()
    no_errors(at)
    report = {"layer": 5, "head": 0, "focus": 2, "query_start": 0, "key_start": 0, "seq": 3}
    replay(at, {}, (element_state(at, element.COMPARE_KEY, {"view": report}),))
    no_errors(at)
    assert title(at) == "Layer 5, head 0"
    assert (at.session_state["layer"], at.session_state["head"], at.session_state["focus"]) == (5, 0, 2)
    shown = chart(at, "map")
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    np.testing.assert_allclose(shown["data"][0]["z"], weights[5, 0], atol=0)
    assert shown["layout"]["shapes"][0]["y0"] == 1.5  # the focus outline
    replay(at, {}, (element_state(at, element.COMPARE_KEY, {"view": {**report, "layer": 99}}),))
    no_errors(at)
    assert title(at) == "Layer 5, head 0"


def test_a_server_side_change_gets_a_new_revision_and_an_echo_does_not(bundled):
    at = run_app()
    data = lambda: json.loads(next(n for n in at._tree if getattr(n, "type", None) == "bidi_component").proto.json)  # noqa: E731
    first = data()["rev"]
    at.session_state["head"] = state.EXAMPLE_HEAD + 1
    at.run()  # the server moved the view (a link, an example): the element adopts it
    assert data()["rev"] == first + 1 and data()["view"]["head"] == state.EXAMPLE_HEAD + 1
    report = {**data()["view"], "head": state.EXAMPLE_HEAD + 2, "seq": 1}
    replay(at, {}, (element_state(at, element.COMPARE_KEY, {"view": report}),))
    assert data()["rev"] == first + 1  # the element's own report: it keeps its (newer) view
    browser_step(at, head=state.EXAMPLE_HEAD + 3)  # the view it left in the hidden box: its own too
    assert data()["rev"] == first + 1 and data()["view"]["head"] == state.EXAMPLE_HEAD + 3


def test_a_new_sentences_maps_travel_once_inside_the_data_and_a_step_names_them_only(bundled):
    """The run that makes a small bundle sends its bytes in the element's data (base64), so the browser paints
    without a request; a head step's data names the same bundle and carries none of it."""
    import base64

    at = run_app()
    data = lambda: json.loads(next(n for n in at._tree if getattr(n, "type", None) == "bidi_component").proto.json)  # noqa: E731
    first = data()
    stored = serving.STORE.get(first["bundle"].rsplit("/", 1)[-1])
    assert first["inline"] is not None and base64.b64decode(first["inline"]) == stored
    header, _ = bundles.unpack(stored)
    assert header["layers"] == list(range(bundled.info.num_layers))  # every layer of the sentence
    browser_step(at, head=state.EXAMPLE_HEAD + 1)
    assert data()["bundle"] == first["bundle"] and data()["inline"] is None
    at.text_area(key="text").input("The dog sat on the mat.").run()
    changed = data()
    assert changed["bundle"] != first["bundle"] and changed["inline"] is not None
    header, values = bundles.unpack(base64.b64decode(changed["inline"]))
    weights = extract(bundled, "The dog sat on the mat.").weights
    np.testing.assert_array_equal(values[: weights.size].reshape(weights.shape), weights.astype(np.float32))


def test_a_bundle_over_the_inline_limit_is_only_fetched(monkeypatch):
    monkeypatch.setattr(bundle, "INLINE_MAX", 10)
    assert bundle.inline([b"x" * 11]) is None and bundle.inline([]) is None
    assert bundle.inline([b"x" * 10]) == "eHh4eHh4eHh4eA=="


def test_rollouts_map_steps_layers_and_never_moves_the_shared_head(bundled):
    """Rollout & norms has one map per layer: its report moves the layer and its own window, never the head
    the other pages share; what it draws is that layer's head average."""
    at = run_app(head=7)
    at.switch_page("attention_viz/ui/pages/rollout.py").run()
    no_errors(at)
    report = {"layer": 5, "head": 0, "focus": -1, "query_start": 0, "key_start": 0, "seq": 1}
    replay(at, {}, (element_state(at, element.ROLLOUT_KEY, {"view": report}),))
    no_errors(at)
    assert (at.session_state["layer"], at.session_state["head"]) == (5, 7)
    assert title(at) == "Rollout & norms: layer 5"  # the map's own title (drawn in the browser)
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    np.testing.assert_allclose(chart(at, element.ROLLOUT_KEY)["data"][0]["z"], weights[5].mean(0), atol=1e-5)


def test_presentation_scales_the_axis_titles_like_the_pages_text(bundled):
    """The map's axis titles stayed 12 px in Presentation while the page's text grew by a fifth."""
    at = run_app(presentation=True)
    no_errors(at)
    (node,) = [n for n in _drawn(at) if n.proto.id.endswith(f"-{element.COMPARE_KEY}")]
    data = json.loads(node.proto.json)
    assert data["axis_font"] == round(figures.NORMAL.font_size * screen.PRESENTATION_SCALE) == 14
    assert data["axis_font"] < data["font"]  # still smaller than the tick labels


def test_every_page_has_the_svg_buttons_of_streamlits_charts_in_the_chosen_language(bundled):
    """The page-wide element that adds the SVG button to each st.plotly_chart's toolbar: in the sidebar (not
    one of the page's elements), hidden, its title in the session's language, the DOM names of internals.py."""
    from attention_viz.ui import internals
    from attention_viz.ui.attention_map.serving import PLOTLY_PATH
    from attention_viz.ui.text import i18n

    at = run_app()
    for page, language in (("attention_viz/ui/pages/all_heads.py", "en"), ("attention_viz/ui/pages/inside.py", "zh")):
        at.session_state[i18n.LANGUAGE_KEY] = language
        at.switch_page(page).run()
        no_errors(at)
        found = [n for n in at.sidebar if getattr(n, "type", None) == "bidi_component"]
        assert [n.proto.component_name for n in found] == [components.SVG_BUTTONS_COMPONENT]
        assert found[0].proto.id.endswith(f"-{components.SVG_BUTTONS_KEY}")
        data = {"plotly": PLOTLY_PATH, "title": i18n.table(language)["attention_map.svg_button"]}
        assert json.loads(found[0].proto.json) == {**data, "dom": internals.SVG_BUTTON_DOM}
        hidden = f".st-key-{components.SVG_BUTTONS_KEY} {{ display: none; }}"
        assert any(hidden in n.proto.body for n in at._tree if getattr(n, "type", None) == "html")


def test_the_server_moving_back_to_the_view_it_last_sent_is_news_to_a_map_that_stepped_since(bundled):
    """The map stepped off the example's head in the browser (nothing sent); the example's "back" button brings
    the server to the head it had last sent. The map shows another head, so it must take the view: a new
    revision (comparing with the view last sent alone would see no change and leave the map where it was)."""
    at = run_app()
    data = lambda: json.loads(next(n for n in at._tree if getattr(n, "type", None) == "bidi_component").proto.json)  # noqa: E731
    first = data()["rev"]
    browser_report(at, head=state.EXAMPLE_HEAD + 1)  # a step in the browser, told with the next run
    at.button(key="example_back").click().run()
    assert data()["view"]["head"] == state.EXAMPLE_HEAD and data()["rev"] == first + 1
    browser_step(at, head=state.EXAMPLE_HEAD + 2)  # the map's own step, taken by a run: no news to the map
    assert data()["view"]["head"] == state.EXAMPLE_HEAD + 2 and data()["rev"] == first + 1


def test_the_pages_hand_the_map_element_data_from_the_cache_and_compute_no_map():
    """A page gives the element the maps the cache made (``cache_maps.held_maps``) and their recipe, never a function of
    its own that computes maps (which would run later in a request's thread); no page imports torch, and the map
    pages no numpy (their arithmetic is the core's)."""
    import ast
    from pathlib import Path

    pages = Path(element.__file__).resolve().parents[1] / "pages"
    for path in sorted(pages.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "torch" not in imported, path.name
        draws = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "draw"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "attention_map"
        ]
        if not draws:
            continue
        assert "numpy" not in imported, path.name
        functions = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.Lambda) and hasattr(node, "name")
        }
        for call in draws:
            names = {node.id for argument in call.args for node in ast.walk(argument) if isinstance(node, ast.Name)}
            assert not names & functions, (path.name, names & functions)
        assert "cache_maps.held_maps(" in ast.unparse(tree), path.name


def test_the_apptest_reading_is_made_from_the_drawing_the_browser_gets():
    """One function builds the drawing data; a map kind the element switches to itself looks as a map drawn with
    that scale, and the AppTest reading picks its colours, title and file name from that data as the browser does."""
    from attention_viz.figures import map_drawing as drawing

    spec = element.MapSpec(
        layers=2,
        heads=1,
        style=figures.NORMAL,
        **element.scale(True),
        texts={"title": "layer {layer}", "query_axis": "q", "key_axis": "k", "colorbar": ""},
        png_prefix="model",
        png_what="difference",
        head_axis=False,
    )
    labels = ["a", "b", "c"]
    data = drawing.drawing(spec, labels, labels)
    look = element.kind_look(True, "the difference", "difference")
    assert {name: data[name] for name in ("colorscale", "zrange", "zmid", "value_format")} == {
        name: look[name] for name in ("colorscale", "zrange", "zmid", "value_format")
    }
    maps = np.full((2, 1, 3, 3), 0.25, np.float32)
    path = f"{serving.ROUTE}/maps/{serving.STORE.put(bundles.bundle(maps, (0, 1), labels, labels, False))}"
    view = {"layer": 1, "head": 0, "focus": -1, "query_start": 0, "key_start": 0}
    shown = apptest_view.as_figure({**data, "bundle": path, "view": view})
    assert shown["data"][0]["colorscale"] == data["colorscale"] and shown["data"][0]["zmid"] == 0.0
    assert (shown["data"][0]["zmin"], shown["data"][0]["zmax"]) == (-1.0, 1.0)
    assert shown["layout"]["title"]["text"] == "layer 1"
    assert shown["config"]["toImageButtonOptions"]["filename"] == "model_layer1_difference"  # one map per layer
    kinds = {"pretrained": element.kind_look(False, "both", "pretrained"), "difference": look}
    switched = {**data, "kinds": kinds, "bundle": path, "view": {**view, "map_view": "pretrained"}}
    assert drawing.look(switched)["colorscale"] == kinds["pretrained"]["colorscale"] != data["colorscale"]
    assert apptest_view.as_figure(switched)["layout"]["title"]["text"] == "both"


def test_rollouts_element_holds_every_kinds_bundle_and_draws_the_one_the_browser_switched_to(bundled):
    """Rollout & norms' map switch is the browser's: the data names each kind's bundle (the kinds not shown made
    when asked for), the view read back at another kind is that kind's map, with its title and colour bar, and the
    hidden box carries the kind and the window under the page's own keys."""
    at = run_app()
    at.switch_page("attention_viz/ui/pages/rollout.py").run()
    no_errors(at)
    data = map_data(at)
    assert (
        set(data["kind_bundles"]) == set(state.ROLLOUT_MAPS) and data["bundle"] == data["kind_bundles"]["raw"]["bundle"]
    )
    assert data["told"] == {
        "layer": "layer",
        "rollout_query_start": "query_start",
        "rollout_key_start": "key_start",
        "rollout_map": "map_view",
    }
    layer = state.EXAMPLE_LAYER
    maps = analysis.rollout_and_norms(bundled.encoder, extract(bundled, state.EXAMPLE_TEXT).encoding, layer)
    for kind in state.ROLLOUT_MAPS:  # as the browser draws each kind after a switch, no run between
        shown = apptest_view.as_figure({**data, "view": {**data["view"], "map_view": kind}})
        np.testing.assert_allclose(shown["data"][0]["z"], getattr(maps, kind), rtol=1e-6, atol=1e-6)
        assert shown["layout"]["title"]["text"] == data["kinds"][kind]["title"].replace("{layer}", str(layer))
        assert ("colorbar" in shown["data"][0]) == (kind == "norm")  # the norms' unit
