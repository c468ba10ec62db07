"""The library internals the app leans on (attention_viz/internals.py, attention_viz/ui/internals.py) are
still there in the installed libraries. A failure here names what an upgrade changed; the module's comment
on that entry says what it breaks and where it is used.
"""

import ast
import gc
import importlib
import json
import logging
import platform
import re
import subprocess
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest
import streamlit

from attention_viz import internals as core_internals
from attention_viz.ui import internals

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attention_viz"
STREAMLIT = Path(streamlit.__file__).parent


def _front_end() -> str:
    """Streamlit's built front end (the JavaScript it serves), as one string."""
    scripts = sorted((STREAMLIT / "static").rglob("*.js"))
    assert scripts, f"no JavaScript under {STREAMLIT / 'static'}: Streamlit's build moved"
    return "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in scripts)


@pytest.fixture(scope="module")
def front_end() -> str:
    return _front_end()


@pytest.mark.parametrize("test_id", internals.TEST_IDS)
def test_streamlit_still_marks_its_elements_with_each_test_id_the_css_uses(front_end, test_id):
    assert re.search(rf"""data-testid["'`]?\s*[:=]\s*[`"']{test_id}[`"']""", front_end) or re.search(
        rf"[`\"']{test_id}[`\"']", front_end
    ), f"Streamlit's front end has no element with data-testid {test_id!r} any more"


@pytest.mark.parametrize("name", internals.CLASS_NAMES)
def test_streamlit_still_gives_its_elements_each_class_name_the_css_uses(front_end, name):
    assert re.search(rf"[`\"'][^`\"']*\b{name}\b[^`\"']*[`\"']", front_end), f"no class {name!r} in Streamlit's build"


def test_every_selector_names_a_test_id_or_class_that_is_checked():
    selectors = [value for name, value in vars(internals).items() if name.isupper() and isinstance(value, str)]
    for selector in selectors:
        if selector.startswith(("[", ".", "header")):
            ids = re.findall(r'data-testid="(\w+)"', selector)
            classes = re.findall(r"\.(st\w+)", selector)
            assert ids or classes, selector
            assert set(ids) <= set(internals.TEST_IDS) and set(classes) <= set(internals.CLASS_NAMES), selector


def test_no_streamlit_dom_name_is_written_outside_the_internals_module():
    """The frame's CSS, the pages and the map's script use Streamlit's test ids through the module only."""
    found = []
    for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.js"), ROOT / "app.py"]:
        if path.name == "internals.py":
            continue
        text = path.read_text(encoding="utf-8")
        for line_number, line in enumerate(text.splitlines(), 1):
            if "data-testid" in line or "stMainBlockContainer" in line:
                found.append(f"{path.relative_to(ROOT)}:{line_number}")
    allowed = {str(Path("attention_viz/ui/attention_map/attention_map.js"))}  # checked below, selector by selector
    assert {place.rsplit(":", 1)[0] for place in found} <= allowed, found


def test_the_map_script_uses_only_the_listed_selectors():
    script = (PACKAGE / "ui" / "attention_map" / "attention_map.js").read_text(encoding="utf-8")
    used = set(re.findall(r"""querySelector(?:All)?\(\s*'([^']*data-testid[^']*)'""", script))
    assert used == set(internals.MAP_SCRIPT_SELECTORS), used


def test_the_map_script_uses_only_the_listed_plotly_selectors():
    script = (PACKAGE / "ui" / "attention_map" / "attention_map.js").read_text(encoding="utf-8")
    used = set(re.findall(r"""^const PLOTLY_\w+ = "([^"]*)";""", script, re.MULTILINE))
    assert used == set(internals.PLOTLY_MAP_SCRIPT_SELECTORS), used
    assert "querySelector(PLOTLY_PLOT_SVG)" in script
    for selector in internals.PLOTLY_MAP_SCRIPT_SELECTORS:
        assert set(re.findall(r"\.([\w-]+)", selector)) <= set(internals.PLOTLY_CLASS_NAMES), selector


@pytest.mark.parametrize("name", internals.PLOTLY_CLASS_NAMES)
def test_the_served_plotly_js_still_makes_each_class_the_map_script_uses(name):
    from attention_viz.ui.attention_map.serving import PLOTLY_JS

    plotly_js = PLOTLY_JS.read_text(encoding="utf-8")
    assert re.search(rf"""classed\(\s*["']{name}["']""", plotly_js), f"plotly.js makes no {name!r} any more"


def test_the_plot_is_plotlys_first_layer_and_the_hover_label_its_last():
    """The order the map's canvas relies on: the plot's SVG inserted first, the hover label's SVG appended
    after the toolbar."""
    from attention_viz.ui.attention_map.serving import PLOTLY_JS

    plotly_js = PLOTLY_JS.read_text(encoding="utf-8")
    assert re.search(r"""_paper=\w+\._paperdiv\.insert\("svg",":first-child"\)""", plotly_js)
    assert re.search(
        r"""_modebardiv=\w+\._paperdiv\.append\("div"\).{0,80}_hoverpaper=\w+\._paperdiv\.append\("svg"\)""", plotly_js
    )


def test_the_missing_context_warning_still_comes_from_the_logger_the_app_filters():
    module = importlib.import_module(internals.SCRIPT_RUN_CONTEXT_LOGGER)
    assert module._LOGGER.name == internals.SCRIPT_RUN_CONTEXT_LOGGER
    assert "missing ScriptRunContext" in Path(module.__file__).read_text(encoding="utf-8")


def test_quiet_missing_context_filters_the_one_logger():
    logger = logging.getLogger(internals.SCRIPT_RUN_CONTEXT_LOGGER)

    def keep(record):
        return False

    try:
        assert internals.quiet_missing_context(keep) is logger
        assert keep in logger.filters
    finally:
        logger.removeFilter(keep)


def _identity_arguments(module: str) -> list:
    source = (STREAMLIT / "elements" / "widgets" / f"{module}.py").read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "compute_and_register_element_id":
            for keyword in node.keywords:
                if keyword.arg == "key_as_main_identity":
                    found.append(ast.literal_eval(keyword.value))
    return found


@pytest.mark.parametrize("module", sorted(internals.WIDGET_IDENTITY_BY_MODULE))
def test_each_widget_is_still_told_apart_by_the_arguments_the_protocol_knows(module):
    expected = internals.WIDGET_IDENTITY_BY_MODULE[module]
    found = _identity_arguments(module)
    assert found, f"streamlit.elements.widgets.{module} no longer computes a widget id as the protocol expects"
    assert all(identity == expected for identity in found), (module, found)


def test_the_protocol_writes_a_widget_anew_for_every_identity_argument_the_app_can_change():
    counted = set().union(*(v for v in internals.WIDGET_IDENTITY_BY_MODULE.values() if isinstance(v, set)))
    assert counted - {"click_mode"} <= set(internals.WIDGET_IDENTITY)


@pytest.mark.parametrize("name", internals.CONTROL_FLOW_EXCEPTIONS)
def test_streamlits_control_flow_passes_through_except_exception(name):
    from streamlit.runtime.scriptrunner_utils import exceptions

    raised = getattr(exceptions, name)
    assert issubclass(raised, BaseException) and not issubclass(raised, Exception)


def test_the_app_turns_off_streamlits_collection_after_every_run():
    import tomllib
    from pathlib import Path

    from streamlit import config

    section, name = internals.POST_SCRIPT_GC_OPTION.split(".")
    app_config = tomllib.loads((Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml").read_text())
    assert app_config[section][name] is False
    # Read from the app's config when run from the repository (an unknown option would raise here).
    assert config.get_option(internals.POST_SCRIPT_GC_OPTION) is False


def test_freeze_survivors_freezes_once():
    frozen = gc.get_freeze_count()
    try:
        internals.freeze_survivors()
        after = gc.get_freeze_count()
        assert after > 0
        internals.freeze_survivors()
        assert gc.get_freeze_count() == after  # once only
    finally:
        if not frozen:
            gc.unfreeze()


def test_sleep_waiting_threads_keeps_an_operators_value(monkeypatch):
    name, value = internals.OMP_WAIT_POLICY
    monkeypatch.delenv(name, raising=False)
    internals.sleep_waiting_threads()
    assert __import__("os").environ[name] == value
    monkeypatch.setenv(name, "ACTIVE")
    internals.sleep_waiting_threads()
    assert __import__("os").environ[name] == "ACTIVE"


PROCESS = "bound_allocator"  # the allocator's settings, beside the thread policy


def test_app_sets_the_thread_policy_before_anything_imports_torch():
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    calls = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("sleep_waiting_threads", PROCESS)
    ]
    other_imports = [
        node.lineno
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and not (isinstance(node, ast.ImportFrom) and node.module in ("pathlib", "attention_viz.ui", "__future__"))
    ]
    assert len(calls) == 2 and all(max(calls) < line for line in other_imports)


def test_plotly_still_takes_the_private_flag_and_skips_validation():
    def bogus():  # a fresh list each time: plotly's validation takes "type" out of the dict it reads
        return [{"type": "heatmap", "z": [[1.0]], "zsmooth": "not a value"}]

    with pytest.raises(ValueError):
        go.Figure(data=bogus())  # validated: a value plotly does not know raises
    figure = core_internals.unvalidated_figure(bogus(), {"title": {"text": "t"}})
    assert figure.to_plotly_json()["data"][0] == {"type": "heatmap", "z": [[1.0]], "zsmooth": "not a value"}
    assert figure.layout.title.text == "t"


# how Streamlit's plotly.js makes each part of a chart's toolbar the SVG button script finds or copies (its class)
_TOOLBAR_NAMES = {
    "chart": r"""classed\(\s*[`"']{}[`"']\s*,\s*!0\)""",
    "modebar": r"""className\s*=\s*[`"']{} modebar--""",
    "group": r"""className\s*=\s*[`"']{}[`"']""",
    "button": r"""className\s*=\s*[`"']{}[`"']""",
    "icon": r"""setAttribute\(\s*[`"']class[`"']\s*,\s*[`"']{}[`"']\s*\)""",
}


def test_the_svg_button_table_names_what_streamlits_plotly_charts_are_made_of(front_end):
    """Each name of the SVG button's table, as Streamlit's own plotly.js (its plotly chart chunk) makes it,
    and the graph div's fields the script reads."""
    dom = internals.SVG_BUTTON_DOM
    assert set(dom) == set(_TOOLBAR_NAMES)
    chart_id, chart_class = dom["chart"].split()  # Streamlit's chart, plotly's graph div in it
    assert chart_id == '[data-testid="stPlotlyChart"]' and "stPlotlyChart" in internals.TEST_IDS
    for name, pattern in _TOOLBAR_NAMES.items():
        made = {"chart": chart_class}.get(name, dom[name]).removeprefix(".")
        assert re.search(pattern.format(re.escape(made)), front_end), f"Streamlit's plotly.js makes no {made!r} now"
    for field in internals.PLOTLY_CHART_FIELDS:  # the camera's options; the toolbar's colours
        assert re.search(rf"\w\.{re.escape(field)}\b", front_end), f"Streamlit's plotly.js reads no {field} any more"


def test_the_served_plotly_js_exports_a_graph_div_from_its_data_layout_and_config():
    """The app's plotly.js saves a chart drawn by Streamlit's from the graph div's fields (Plotly.toImage)."""
    from attention_viz.ui.attention_map.serving import PLOTLY_JS

    plotly_js = PLOTLY_JS.read_text(encoding="utf-8")
    fields = r"getGraphDiv\((\w)\),\w=\w+\.extendDeep\(\[\],\1\.data\),\w=\w+\.extendDeep\(\{\},\1\.layout\)"
    assert re.search(fields + r",\w=\1\._context,\w=\1\._fullLayout", plotly_js)


def test_the_svg_button_script_finds_the_toolbar_by_the_table_only():
    script = (PACKAGE / "ui" / "attention_map" / "svg_buttons.js").read_text(encoding="utf-8")
    for name in internals.SVG_BUTTON_DOM:
        assert f"dom.{name}" in script, name
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("//"))
    strings = re.findall(r"""(["'`])(.*?)\1""", code)
    named = [text for _, text in strings if re.search(r"modebar|plotly-plot|testid|\bst[A-Z]|\bicon\b", text)]
    assert not named, named  # no name of Streamlit's or plotly's DOM but the table's
    for field in internals.PLOTLY_CHART_FIELDS:  # read as `gd._context && gd._context.toImageButtonOptions`
        owner, name = field.split(".")
        assert f"gd.{owner} && gd.{owner}.{name}" in code, field


ALLOCATOR_PROBE = """
import ctypes, json, sys
from attention_viz.ui import internals

class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype, libc.malloc.restype, libc.free.argtypes = Info, ctypes.c_void_p, [ctypes.c_void_p]
done = internals.bound_allocator() if sys.argv[1] == "bound" else {}
assert sys.argv[1] != "bound" or internals.bound_allocator() is done  # once per process
libc.free(libc.malloc(8 << 20))  # a large block freed: glibc's own default raises its mapping threshold past it
before = libc.mallinfo2().hblks
block = libc.malloc(1 << 20)  # then a block of 1 MiB: a mapping of its own, or a piece of the heap
print(json.dumps({"done": done, "mapped": libc.mallinfo2().hblks - before}))
libc.free(block)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the settings are glibc's")
@pytest.mark.parametrize("how", ["bound", "default"])
def test_the_allocator_gives_a_large_freed_block_back_to_the_system(how, monkeypatch):
    """After a large block was freed, glibc by itself puts the next 1 MiB block in its heap (where it stays when
    freed); bound, it gets a mapping of its own, returned when freed."""
    for variable in internals.MALLOC_OPTIONS:
        monkeypatch.delenv(variable, raising=False)
    run = subprocess.run([sys.executable, "-c", ALLOCATOR_PROBE, how], capture_output=True, text=True, cwd=ROOT)
    found = json.loads(run.stdout)
    assert found["mapped"] == (1 if how == "bound" else 0), (found, run.stderr)
    if how == "bound":
        assert found["done"] == {"MALLOC_MMAP_THRESHOLD_": 128 * 1024}


def test_an_operators_allocator_variable_wins(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert internals.bound_allocator.__wrapped__() == {}


def test_streamlit_still_flags_the_run_that_back_or_forward_asks_for():
    import dataclasses

    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

    assert internals.HISTORY_NAVIGATION_FIELD in {field.name for field in dataclasses.fields(ScriptRunContext)}
    assert internals.HISTORY_NAVIGATION_FIELD in ClientState.DESCRIPTOR.fields_by_name
    assert internals.history_navigation() is False  # outside a run
