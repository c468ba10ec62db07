"""Head similarity and Rollout & norms download what they show; the attention JSON says what it holds; the
similarity map labels each head where there is room."""

import base64
import io
import json

import numpy as np
import pandas as pd
import pytest
from apptools import no_errors, run_app
from streamlit.runtime.media_file_manager import MediaFileManager

from attention_viz import analysis, figures
from attention_viz.extraction import export, extract
from attention_viz.figures.heads import LABEL_FONT, MARKER_PX, SIMILARITY_PLOT_PX
from attention_viz.ui.server import cache, cache_heads
from attention_viz.ui.shared import downloads
from attention_viz.ui.text import i18n
from attention_viz.ui.view import state

SIMILARITY = "attention_viz/ui/pages/head_similarity.py"
ROLLOUT = "attention_viz/ui/pages/rollout.py"
EN = i18n.table("en")


@pytest.fixture
def files(monkeypatch):
    """Every file a download button would hand over, built at once, by its file name."""
    built = {}
    original = MediaFileManager.add_deferred

    def keep(self, data_callable, *args, **kwargs):
        built[kwargs.get("file_name")] = data_callable()
        return original(self, data_callable, *args, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    return built


def _named(files: dict, ending: str) -> str:
    (name,) = [name for name in files if name.endswith(ending)]
    data = files[name]
    return data.decode() if isinstance(data, bytes) else data


def test_head_similarity_downloads_each_heads_place_and_the_divergence(bundled, files):
    at = run_app()
    at.switch_page(SIMILARITY).run()
    no_errors(at)
    labels = [button.label for button in at.get("download_button")]
    assert EN["links.download_shown_csv"] in labels and EN["links.download_shown_json"] in labels
    divergence = cache_heads.text_divergence(bundled, state.EXAMPLE_TEXT, None)
    positions = analysis.mds_layout(divergence)
    table = pd.read_csv(io.StringIO(_named(files, "head_similarity_text.csv")))
    assert list(table.columns) == ["layer", "head", "x", "y"] and len(table) == 72
    np.testing.assert_allclose(table[["x", "y"]].to_numpy(), positions, rtol=1e-6, atol=1e-7)
    payload = json.loads(_named(files, "head_similarity_text.json"))
    assert "Jensen-Shannon" in payload["what"] and payload["scope"] == "text"
    np.testing.assert_allclose(np.array(payload["divergence"]), divergence, atol=1e-7)
    assert payload["heads"][13] == {
        "layer": 1,
        "head": 1,
        "x": pytest.approx(positions[13, 0]),
        "y": pytest.approx(positions[13, 1]),
    }


@pytest.mark.parametrize("view", ["pretrained", "difference"])
def test_compares_html_download_is_the_head_shown_made_when_asked(bundled, files, view):
    """Compare's HTML download is a plotly page of the head and map shown (made only when the button asks;
    the element draws the screen's map)."""
    at = run_app(head=4, map_view=view)
    no_errors(at)
    html = _named(files, f"layer{state.EXAMPLE_LAYER}_head4_{view}.html")
    call = html[html.rindex("Plotly.newPlot(") :]
    decoder = json.JSONDecoder()
    traces, at_layout = decoder.raw_decode(call, call.index("[{"))
    layout, _ = decoder.raw_decode(call, call.index("{", at_layout))
    assert layout["title"]["text"] == EN[f"compare.map_title_{view}"].format(variant=EN["compare.variant_exact"])
    weights = extract(bundled, state.EXAMPLE_TEXT).weights[state.EXAMPLE_LAYER, 4]
    shown = weights if view == "pretrained" else np.zeros_like(weights)  # the exact variant: no difference
    z = traces[0]["z"]  # plotly's typed array: base64 of little-endian values, with its dtype and shape
    values = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]).newbyteorder("<"))
    shape = tuple(int(n) for n in str(z["shape"]).split(","))
    np.testing.assert_allclose(values.reshape(shape), shown, atol=1e-5)


@pytest.mark.parametrize("shown", ["raw", "rollout", "norm"])
def test_rollout_and_norms_downloads_the_whole_shown_map(bundled, files, shown):
    text = "hello " * 30  # longer than the window: the files hold every token, not only the window
    at = run_app(text=text, rollout_map=shown, word_level=True)
    at.switch_page(ROLLOUT).run()
    no_errors(at)
    result = cache.pretrained(bundled, text, None)
    maps = cache.rollout_and_norms(bundled, text, None, 3)
    options = analysis.ViewOptions(word_level=shown != "norm")
    view = analysis.apply_view(getattr(maps, shown), result.encoding, options, renormalise=shown != "norm")
    frame = pd.read_csv(io.StringIO(_named(files, f"rollout_{shown}.csv")), index_col=0)
    np.testing.assert_allclose(frame.to_numpy(), view.matrix, rtol=1e-6, atol=1e-7)
    assert frame.shape == (len(view.query_labels), len(view.key_labels)) and frame.shape[0] > 24
    payload = json.loads(_named(files, f"rollout_{shown}.json"))
    assert (
        payload["layer"] == 3
        and payload["what"]
        == {"raw": "head average", "rollout": "attention rollout", "norm": "norm-based attention"}[shown]
    )
    np.testing.assert_allclose(np.array(payload["matrix"]), view.matrix, atol=1e-7)
    assert payload["query_labels"] == list(view.query_labels)


def _json_button(at):
    (button,) = [b for b in at.get("download_button") if "download_json_" in b.proto.id]
    return button


def test_the_attention_json_button_says_it_holds_the_pretrained_token_level_attention(bundled):
    at = run_app()
    no_errors(at)
    button = _json_button(at)
    assert "pretrained" in button.proto.label.lower() and "not applied" in button.proto.help


def test_the_attention_json_button_names_its_size_and_a_large_one_warns(bundled):
    """At 282 tokens the file was 131 MB, with no word of its size before the click."""
    written = len(export.attention_json(extract(bundled, state.EXAMPLE_TEXT)).encode("utf-8"))  # 16 tokens
    at = run_app()
    no_errors(at)
    assert _json_button(at).proto.label == EN["links.download_json"].format(size=f"≈ {round(written / 1e3)} kB")
    assert not any("MB" in c.value for c in at.main.caption)  # no warning for a sentence (the sidebar names sizes)
    text = "The cat sat on the mat because it was tired. " * 20  # 222 tokens
    at = run_app(text=text)
    no_errors(at)
    estimate = export.attention_json_size(extract(bundled, text))
    size = downloads.file_size(estimate)
    assert estimate > downloads.LARGE_DOWNLOAD and size == f"≈ {round(estimate / 1e6)} MB"
    assert _json_button(at).proto.label == EN["links.download_json"].format(size=size)
    (warning,) = [c.value for c in at.main.caption if size in c.value]
    assert warning == EN["links.download_json_large"].format(size=size)


def _label_boxes(trace) -> list[tuple[float, float, float, float]]:
    x, y = np.asarray(trace.x), np.asarray(trace.y)
    points = np.stack([x, y], axis=1)
    scale = SIMILARITY_PLOT_PX / np.ptp(points, axis=0).max()
    boxes = []
    for (px, py), text in zip(points * scale, trace.text, strict=True):
        if text:
            width = len(text) * 0.62 * LABEL_FONT
            boxes.append((px - width / 2, px + width / 2, py + MARKER_PX / 2, py + MARKER_PX / 2 + LABEL_FONT * 1.2))
    return boxes


def test_the_similarity_map_labels_every_head_that_has_room_and_no_two_labels_overlap():
    """Only the selected head had a label: a point was identified by hovering."""
    rng = np.random.default_rng(0)
    spread = np.stack(np.meshgrid(np.arange(12), np.arange(6)), axis=-1).reshape(-1, 2) * 10.0  # a roomy grid
    trace = figures.similarity_map(spread, 12, "t", "layer", "head", selected=(2, 3)).data[0]
    assert all(text == f"{i // 12}·{i % 12}" for i, text in enumerate(trace.text))  # room for all: all labelled
    clustered = np.concatenate([rng.normal(0, 0.01, (60, 2)), rng.normal(0, 1, (12, 2)) * 5])
    trace = figures.similarity_map(clustered, 12, "t", "layer", "head", selected=(0, 0)).data[0]
    labelled = [i for i, text in enumerate(trace.text) if text]
    assert 0 in labelled and 3 < len(labelled) < 40  # the outliers have room, the dense cluster has not
    boxes = _label_boxes(trace)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert a[1] < b[0] or a[0] > b[1] or a[3] < b[2] or a[2] > b[3], (a, b)
