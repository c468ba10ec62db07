"""Downloads: CSV, JSON and HTML hold the core's values; the PNG config names the file."""

import io
import json

import numpy as np
import pandas as pd
import pytest

from attention_viz import figures
from attention_viz.extraction import export, extract


def test_csv_holds_the_matrix_and_its_labels(bundled):
    result = extract(bundled, "The cat sat on the cat.")
    matrix, labels = result.weights[2, 5], result.encoding.labels
    frame = pd.read_csv(io.StringIO(export.matrix_csv(matrix, labels)), index_col=0)
    assert list(frame.index) == list(labels)
    assert [c.split(".")[0] if c.startswith("cat.") else c for c in frame.columns] == list(labels)
    np.testing.assert_allclose(frame.to_numpy(), matrix, rtol=1e-7)
    assert frame.index.name == "query \\ key"


def test_json_has_the_cli_fields_and_all_attention(bundled):
    result = extract(bundled, "动物累了", "It slept")
    payload = json.loads(export.attention_json(result))
    assert list(payload) == [
        "model", "source", "variant", "seed", "tokens", "labels", "segments", "is_pair", "num_layers",
        "num_heads", "layer", "head", "num_input_tokens", "truncated", "cut", "attention",
    ]  # fmt: skip
    assert np.array_equal(np.array(payload["attention"], dtype=np.float32), result.weights)
    assert payload["labels"] == list(result.encoding.labels) and payload["segments"][-1] == 1
    one = json.loads(export.attention_json(result, 1, 2))
    assert np.array_equal(np.array(one["attention"], dtype=np.float32), result.weights[1, 2])


def test_html_is_standalone_and_holds_the_figure(bundled):
    result = extract(bundled, "The cat sat.")
    html = export.figure_html(figures.attention_heatmap(result.weights[0, 0], result.encoding.labels, "L0 H0"))
    assert html.startswith("<!doctype html>") and "<script src=" not in html and "Plotly.newPlot" in html
    assert "L0 H0" in html and len(html) > 1_000_000  # plotly.js is inside


def test_image_config_names_the_png_and_doubles_its_scale():
    config = export.image_config("/tmp/my models/tiny bert/", 3, 1, "inside")
    assert config == {
        "toImageButtonOptions": {"format": "png", "filename": "attention_tiny-bert_layer3_head1_inside", "scale": 2}
    }
    assert export.file_stem("all-MiniLM-L6-v2", "all") == "attention_all-MiniLM-L6-v2_all"


def test_the_attention_json_size_is_known_before_it_is_written(bundled):
    """The JSON of every head grows as tokens² (131 MB at 282 tokens): its button names its size before the
    click, estimated without writing it."""
    for text, pair in (("Hi.", None), ("The cat sat on the mat. " * 12, "It was tired, and then it slept.")):
        result = extract(bundled, text, pair)
        written = len(export.attention_json(result).encode("utf-8"))
        assert export.attention_json_size(result) == pytest.approx(written, rel=0.01), result.encoding.num_tokens
