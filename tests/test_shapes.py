"""Every BERT shape opens on every page and in the command line: one layer, one head, one of each, twelve heads
in one layer, one token type with a sentence pair, a hidden size that is not a multiple of 64, head_dim 1."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from apptools import chart, no_errors, run_app, title, z
from conftest import make_tiny_bert

from attention_viz.cli import main
from attention_viz.extraction import extract
from attention_viz.models.loading import load_model

SHAPES = {
    "1x1": dict(hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=16),
    "1-layer-12-heads": dict(hidden_size=24, num_hidden_layers=1, num_attention_heads=12, intermediate_size=32),
    "3-layers-1-head": dict(hidden_size=24, num_hidden_layers=3, num_attention_heads=1, intermediate_size=48),
    "one-token-type": dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, type_vocab_size=1
    ),
    "hidden-36": dict(hidden_size=36, num_hidden_layers=2, num_attention_heads=3, intermediate_size=40),
    "head-dim-1": dict(hidden_size=4, num_hidden_layers=2, num_attention_heads=4, intermediate_size=8),
}
TEXT, PAIR = "The cat sat on the mat.", "It was tired"
PAGES = {
    name: f"attention_viz/ui/pages/{name}.py"
    for name in ("compare", "all_heads", "head_stats", "head_similarity", "rollout", "inside", "article")
}


@pytest.fixture(scope="module", params=sorted(SHAPES))
def shape(request, tmp_path_factory):
    """``(name, folder, loaded)`` of one tiny random BERT shape."""
    folder = make_tiny_bert(tmp_path_factory.mktemp(request.param), **SHAPES[request.param])
    return request.param, folder, load_model(folder)


def _shown_head(info) -> tuple[int, int]:
    """The head the app shows: the example's layer 3, head 1, clamped to the model."""
    return min(3, info.num_layers - 1), min(1, info.num_heads - 1)


def test_every_page_opens(shape):
    name, folder, loaded = shape
    info = loaded.info
    expected = extract(loaded, TEXT, PAIR)
    t = expected.encoding.num_tokens
    layer, head = _shown_head(info)
    at = run_app(model=folder, text=TEXT, pair=PAIR)
    no_errors(at)
    assert np.array_equal(z(chart(at, "map")), expected.weights[layer, head])
    assert title(at) == f"Layer {layer}, head {head}"
    one_type = SHAPES[name].get("type_vocab_size") == 1
    notes = " ".join(element.value for element in [*at.caption, *at.info, *at.warning])
    assert ("one token type" in notes) == one_type

    at.switch_page(PAGES["all_heads"]).run()
    no_errors(at)
    assert title(at) == f"All heads: {info.num_layers} layers × {info.num_heads} heads"

    at.switch_page(PAGES["head_stats"]).run()
    no_errors(at)
    table = at.dataframe[0].value
    assert len(table) == info.num_layers * info.num_heads and table["entropy"].notna().all()

    at.switch_page(PAGES["head_similarity"]).run()
    no_errors(at)
    caption = at.main.caption[-1].value
    assert caption.startswith(f"{info.num_layers * info.num_heads} head") and "nan" not in caption

    at.switch_page(PAGES["rollout"]).run()
    no_errors(at)
    assert z(chart(at, "rollout_chart")).shape == (t, t)

    at.switch_page(PAGES["inside"]).run()
    no_errors(at)
    assert z(chart(at, "step_query")).shape == (1, info.head_dim)
    assert z(chart(at, "step_keys")).shape == (t, info.head_dim)
    assert np.abs(z(chart(at, "inside_map")) - expected.weights[layer, head]).max() <= 1e-5

    at.switch_page(PAGES["article"]).run()
    no_errors(at)
    assert z(chart(at, "article_correct")).shape == (t, t)


def test_the_command_line_reads_every_shape(shape, capsys, tmp_path):
    name, folder, loaded = shape
    info = loaded.info
    assert main(["attention", TEXT, "--pair", PAIR, "--model", folder]) == 0
    out, err = capsys.readouterr()
    payload = json.loads(out)
    expected = extract(loaded, TEXT, PAIR)
    assert np.array(payload["attention"]).shape == expected.weights.shape
    assert np.abs(np.array(payload["attention"]) - expected.weights).max() < 1e-7
    assert payload["segments"] == expected.encoding.segments.tolist() and 1 in payload["segments"]
    assert ("one token type" in err) == (SHAPES[name].get("type_vocab_size") == 1)

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(f"{TEXT}\n{TEXT}\t{PAIR}\nA dog.\n", encoding="utf-8")
    assert main(["stats", str(corpus), "--model", folder]) == 0
    out, _ = capsys.readouterr()
    frame = pd.read_csv(io.StringIO(out))
    assert len(frame) == info.num_layers * info.num_heads
    assert list(zip(frame["layer"], frame["head"], strict=True)) == [
        (layer, head) for layer in range(info.num_layers) for head in range(info.num_heads)
    ]
    assert frame["a_to_b"].notna().all()  # the pair line counted, with one token type too
