"""Head statistics at a laptop's width: every table header whole, and neighbouring tags apart."""

import json

import numpy as np
import pytest
from apptools import no_errors, run_app

from attention_viz.figures import head_overview
from attention_viz.figures.layout import text_width

HEAD_STATS = "attention_viz/ui/pages/head_stats.py"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_number_column_is_wide_enough_for_its_whole_header(language):
    """The importance column's header was cut to "importance (c": the grid sizes a column by its values."""
    at = run_app(lang=language)
    at.switch_page(HEAD_STATS).run()
    no_errors(at)
    columns = json.loads(at.dataframe[-1].proto.columns)
    assert "importance" in columns
    for name, column in columns.items():
        if column.get("type_config", {}).get("format") == "%.3f":  # every statistic
            assert column["width"] >= text_width(column["label"], 14), (name, column)


def test_neighbouring_heads_tags_sit_on_alternate_sides_of_their_marks():
    grid = np.random.default_rng(0).random((2, 12))
    figure = head_overview(grid, ["broad"] * 24, "t", "c")
    positions = figure.data[0].textposition
    for index in range(len(positions) - 1):
        if (index + 1) % 12:  # neighbours in one layer's row
            assert positions[index] != positions[index + 1]
