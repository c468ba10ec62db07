"""AppTest: an encoder–decoder (a tiny T5 built offline) with one of its two texts empty says which one is empty,
the source or the target, instead of "the text is empty" beside a source the user can see filled in; a too long
one says which too."""

from __future__ import annotations

import pytest
from apptools import no_errors, run_app
from tiny_seq2seq import make_tiny_seq2seq


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory) -> str:
    return make_tiny_seq2seq("t5", tmp_path_factory.mktemp("tiny-empty-t5"))


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        ("Where is it?", "  ", "The target text is empty (or only invisible characters): type one."),
        ("", "It was tired.", "The source text is empty (or only invisible characters): type one."),
    ],
)
def test_an_empty_source_or_target_is_named(t5_dir, source, target, expected):
    for page in ("compare", "inside"):
        at = run_app(model=t5_dir, text=source, target=target)
        at.switch_page(f"attention_viz/ui/pages/{page}.py").run()
        no_errors(at)
        assert [i.value for i in at.info] == [expected + " Your text is kept in the sidebar."], page


@pytest.mark.parametrize("which", ["source", "target"])
def test_a_too_long_source_or_target_is_named(t5_dir, which):
    long = "a " * 2_501  # 5,002 characters, past the default limit of 5,000
    texts = {"source": long, "target": "It was tired."} if which == "source" else {"source": "Where?", "target": long}
    at = run_app(model=t5_dir, text=texts["source"], target=texts["target"])
    no_errors(at)
    assert [i.value for i in at.info] == [
        f"The {which} text has 5,002 characters; the limit is 5,000. Shorten it to see its attention: your text is "
        "kept in the sidebar."
    ]
