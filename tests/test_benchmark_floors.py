"""The benchmarks' bare Streamlit pages draw what the app's pages draw: as many elements, of the same kinds.

The first map and a page switch are measured beside these floors (``benchmarks/pages.py``); a floor that drew
fewer elements than the app would make the app look slower than Streamlit lets it be.
"""

from collections import Counter
from pathlib import Path

from apptools import run_app
from streamlit.testing.v1 import AppTest

from benchmarks import bare_elements

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
ALL_HEADS = "attention_viz/ui/pages/all_heads.py"


def _kinds(node) -> Counter:
    """Every element under ``node`` by kind (containers included), as AppTest names them."""
    found = Counter()
    children = getattr(node, "children", None)
    for child in children.values() if isinstance(children, dict) else ():
        found[child.type] += 1
        found += _kinds(child)
    return found


def _bare(page: str) -> AppTest:
    """``bare_elements``' sidebar and ``page`` (a function's name), run alone."""
    script = f"import sys\nsys.path.insert(0, {str(BENCHMARKS)!r})\nimport bare_elements\n"
    script += f"bare_elements.sidebar()\nbare_elements.{page}()\n"
    at = AppTest.from_string(script, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def test_the_bare_pages_draw_as_many_elements_as_the_apps_pages():
    app = run_app()
    app_sidebar, app_compare = _kinds(app.sidebar), _kinds(app.main)
    app.switch_page(ALL_HEADS).run()
    assert not app.exception
    app_heads = _kinds(app.main)
    assert sum(app_sidebar.values()) == bare_elements.SIDEBAR_ELEMENTS, app_sidebar
    assert sum(app_compare.values()) == bare_elements.COMPARE_ELEMENTS, app_compare
    assert sum(app_heads.values()) == bare_elements.ALL_HEADS_ELEMENTS, app_heads

    compare, heads = _bare("compare_page"), _bare("all_heads_page")
    assert sum(_kinds(compare.sidebar).values()) == bare_elements.SIDEBAR_ELEMENTS
    assert sum(_kinds(compare.main).values()) == bare_elements.COMPARE_ELEMENTS
    assert sum(_kinds(heads.main).values()) == bare_elements.ALL_HEADS_ELEMENTS
    # the widgets, the costliest kinds to draw, are the app's own kinds in the same numbers
    widgets = ("button", "download_button", "toggle", "selectbox", "text_input", "text_area", "radio", "popover")
    for bare, real in ((compare.main, app_compare), (compare.sidebar, app_sidebar), (heads.main, app_heads)):
        assert {kind: _kinds(bare)[kind] for kind in widgets} == {kind: real[kind] for kind in widgets}
