"""Grouped-query attention shown as groups: the sidebar names them, All heads labels and separates each key/value
head's query heads, Head similarity outlines them; the heads of a group do share their keys. And the sidebar's
size of a model and its forward's estimate."""

from __future__ import annotations

import re

import numpy as np
import torch
from apptools import chart, decode, no_errors, run_app

from attention_viz.figures.heads import group_outline
from attention_viz.models import sizes
from attention_viz.ui.server import cache

TEXT = "The animal didn't cross the street because it was too tired."


def _sidebar(at) -> str:
    return " ".join(c.value for c in at.sidebar.caption)


def test_the_heads_of_a_group_share_their_keys_exactly(family_model):
    loaded = family_model("llama")
    info, decoder = loaded.info, loaded.encoder
    assert (info.num_heads, info.num_key_value_heads, info.heads_per_group) == (4, 2, 2)
    assert [info.head_group(h) for h in range(4)] == [0, 0, 1, 1]
    ids = loaded.tokenizer(TEXT, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        hidden = decoder(ids).hidden_states
        for layer in range(info.num_layers):
            q, k, v = decoder.layers[layer].attention.head_vectors(decoder.attention_input(hidden, layer))
            for head in range(4):
                partner = info.head_group(head) * 2 + (1 - head % 2)
                assert torch.equal(k[0, head], k[0, partner]) and torch.equal(v[0, head], v[0, partner])
            assert not torch.equal(k[0, 0], k[0, 2]) and not torch.equal(q[0, 0], q[0, 1])


def test_all_heads_labels_and_separates_the_key_value_groups(family_dir):
    folder = family_dir("llama")
    at = run_app(model=folder, text=TEXT, pair="", layer=0, head=0)
    no_errors(at)
    assert "4 query heads in 2 groups of 2 (GQA)" in _sidebar(at)
    at.switch_page("attention_viz/ui/pages/all_heads.py").run()
    no_errors(at)
    grid = chart(at, "head_grid")
    layout, meta = grid["layout"], grid["data"][0]["meta"]
    step, cells = meta["keys"] + meta["gap"], meta["keys"]
    # each head's columns, in the heatmap's cells (category numbers): [first - 1/2, last + 1/2]
    spans = [(h * step - 0.5, h * step + cells - 0.5) for h in range(4)]
    labels = [a for a in layout["annotations"] if a.get("name") == "kv group"]
    assert [a["text"] for a in labels] == ["kv 0", "kv 1"]
    assert [a["x"] for a in labels] == [(spans[0][0] + spans[1][1]) / 2, (spans[2][0] + spans[3][1]) / 2]
    (line,) = [s for s in layout["shapes"] if s.get("name") == "kv group"]
    gap = (spans[1][1] + spans[2][0]) / 2  # between head 1 and head 2: the groups' border
    assert line["x0"] == line["x1"] == gap and spans[1][1] < gap < spans[2][0]
    assert (line["y0"], line["y1"]) == (-0.5, len(grid["data"][0]["y"]) - 0.5)  # top to bottom of the grid


def test_head_similarity_outlines_the_groups_of_the_selected_head_s_layer(family_dir):
    folder = family_dir("llama")
    at = run_app(model=folder, text=TEXT, pair="", layer=1, head=3)
    at.switch_page("attention_viz/ui/pages/head_similarity.py").run()
    no_errors(at)
    figure = chart(at, "similarity_map")
    trace = figure["data"][0]
    points = np.stack([decode(trace["x"]), decode(trace["y"])], axis=1)  # (layers * heads, 2), layer-major
    customdata = decode(trace["customdata"])
    assert customdata[:, 2].tolist() == [0, 0, 1, 1, 0, 0, 1, 1]  # each head's key/value head
    outlines = [s for s in figure["layout"]["shapes"] if s.get("name", "").startswith("kv ")]
    assert [s["name"] for s in outlines] == ["kv 1·0", "kv 1·1"]  # layer 1's two groups
    for group, outline in enumerate(outlines):  # a group of two: the segment between its heads, exactly
        vertices = [tuple(map(float, p.split())) for p in re.findall(r"[-\d.e]+ [-\d.e]+", outline["path"])]
        first = 4 + 2 * group  # layer 1's heads are points 4 to 7
        assert sorted(vertices) == sorted(map(tuple, points[first : first + 2].tolist()))
    assert [s["line"]["dash"] for s in outlines] == ["dot", "solid"]  # head 3 is in group 1


def test_a_model_without_groups_shows_none(family_dir):
    at = run_app(model=family_dir("gpt2"), text=TEXT, pair="", layer=0, head=0)
    assert "GQA" not in _sidebar(at)
    at.switch_page("attention_viz/ui/pages/all_heads.py").run()
    layout = chart(at, "head_grid")["layout"]
    assert not [a for a in layout["annotations"] if a.get("name") == "kv group"]
    assert not [s for s in layout.get("shapes", []) if s.get("name") == "kv group"]


def test_the_sidebar_says_the_size_and_the_forward_estimate(family_dir):
    folder = family_dir("llama")
    at = run_app(model=folder, text=TEXT, pair="", layer=0, head=0)
    no_errors(at)
    need = sizes.memory_need(folder)
    loaded = cache.model(folder)
    estimate = cache.forward_estimate(loaded)  # cached: the one the sidebar shows
    assert estimate.tokens == 64  # the tiny model's 64 positions, fewer than 512
    shown = f"{need.parameters:,} parameters: {sizes.size_text(need.bytes)} in float32."
    assert shown in _sidebar(at)
    assert f"A forward of 64 tokens takes about {sizes.duration_text(estimate.seconds)}" in _sidebar(at)


def test_a_group_outline_is_the_convex_hull():
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.5, 0.5]])  # the centre lies inside
    assert group_outline(square) == "M 0.0 0.0 L 1.0 0.0 L 1.0 1.0 L 0.0 1.0 Z"
    assert group_outline(np.array([[2.0, 1.0], [0.5, -1.0]])) == "M 0.5 -1.0 L 2.0 1.0"
    assert group_outline(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])) == "M 0.0 0.0 L 2.0 2.0"
