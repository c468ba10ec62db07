"""The article's page and its page in the docs say the same true thing: both maps are random layers (weights
from a seed), the left one a correct layer of BERT's design, not the loaded model's pretrained head."""

import re
from pathlib import Path

import numpy as np
from apptools import figures, no_errors, run_app, z

from attention_viz.analysis import article_compare
from attention_viz.ui.server import cache
from attention_viz.ui.text import i18n

ROOT = Path(__file__).resolve().parent.parent
ARTICLE = "attention_viz/ui/pages/article.py"


README_LINE = re.compile(r"- \[\*\*The article's layer\*\*\]\(docs/pages/article\.md\):(.*?)\n(- |\n)", re.S)


def _readme_line() -> str:
    """The README's one line on the page, in its list of pages."""
    return README_LINE.search((ROOT / "README.md").read_text()).group(1)


def test_the_docs_say_the_left_map_is_a_correct_layer_with_random_weights():
    page = " ".join((ROOT / "docs" / "pages" / "article.md").read_text().split())
    for text in (page, " ".join(_readme_line().split())):
        assert "beside BERT's on the same input" not in text  # it read as the pretrained BERT head
    assert "random" in page and "not the loaded model's heads" in page and "seed" in page
    assert "correct layer" in _readme_line()


def test_the_page_says_so_and_its_left_map_is_the_seeded_correct_layer_not_the_model(bundled):
    at = run_app(layer=2, head=4)
    at.switch_page(ARTICLE).run()
    no_errors(at)
    en = i18n.table("en")
    left = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith(en["article.fig_correct"]))
    assert "random weights" in en["article.fig_correct"] and "not the loaded model's heads" in en["article.intro"]
    assert (
        "随机权重" in i18n.table("zh")["article.fig_correct"]
        and "不是已加载模型的头" in i18n.table("zh")["article.intro"]
    )
    text = at.session_state["text"]
    hidden = cache.layer_inputs(bundled, text, None)[2]
    correct, _ = article_compare.article_maps(hidden, bundled.info.num_heads, 0)
    pretrained = cache.pretrained(bundled, text, None).weights[2, 4]
    shown = z(left)
    np.testing.assert_allclose(shown, correct[4][: shown.shape[0], : shown.shape[1]], atol=1e-6)
    assert np.abs(shown - pretrained[: shown.shape[0], : shown.shape[1]]).max() > 0.05  # not the model's head
