"""The short form of the class at the server (tests/class_load.py): simulated students that speak Streamlit's
protocol, against the suite's shared server and against the suite's 2 replicas behind nginx."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import re
import struct
from pathlib import Path

import numpy as np
import plotly.io
import streamlit
from class_load import STEPS, Page, Report, Student, decode_bundle, decode_map, run

from attention_viz.extraction import extract
from attention_viz.figures import attention_heatmap
from attention_viz.ui.attention_map import serving


def test_decode_map_reads_back_the_apps_heatmap(bundled):
    result = extract(bundled, "The cat sat on the mat, the cat sat.")  # repeated labels get invisible suffixes
    figure = attention_heatmap(result.weights[2, 3], list(result.encoding.labels))
    labels, weights = decode_map(plotly.io.to_json(figure, validate=False))  # as Streamlit sends it
    assert labels == list(result.encoding.labels)
    np.testing.assert_allclose(weights, result.weights[2, 3], atol=1e-6)


def test_three_students_each_get_their_own_head_of_their_own_sentence(server, bundled):
    report = run(sessions=3, seconds=12, interval=2, new_sentence_share=0.25, server=server, bundled=bundled)
    summary = report.summary()
    assert report.passed, summary
    assert report.connected == 3 and report.cross_talk == 0 and report.wrong_values == 0, summary
    assert report.arrivals == 3 and report.changes + report.new_sentences >= 3 * 3, summary  # 3 changes each at least
    assert report.checks == report.arrivals + report.changes + report.new_sentences, summary  # every map compared
    assert all(0 < s < 60 for s in report.change_s), summary
    assert report.server_cpu_s > 0 and report.load_average, summary


def _streamlits_scripts() -> int:
    """The bytes of the scripts Streamlit's own page names (its entry and the modules it preloads), as its server
    sends them (not compressed)."""
    static = Path(streamlit.__file__).parent / "static"
    html = (static / "index.html").read_text("utf-8")
    named = re.findall(r'(?:src|href)="\./(static/js/[^"]+\.js)"', html)
    assert len(named) > 10, named
    return sum((static / path).stat().st_size for path in named)


def test_in_the_browser_mode_a_step_sends_nothing_and_a_new_sentence_or_a_page_keeps_the_view(server, bundled):
    """Steps are drawn in the browser (no run asked for); a new sentence and each leg of a page switch are a
    run that carries the view, and the map each brings back is the student's own sentence at its own head;
    every student's first map is the opening example, timed."""
    report = run(
        sessions=3,
        seconds=14,
        interval=1,
        new_sentence_share=0.2,
        page_switch_share=0.2,
        server=server,
        bundled=bundled,
        step="browser",
        page_files=True,
    )
    summary = report.summary()
    assert report.passed and report.cross_talk == 0 and report.wrong_values == 0, summary
    assert report.browser_steps >= 3 and report.changes == 0 and not report.change_s, summary
    assert report.page_switches >= 2 and report.page_switches % 2 == 0 and report.new_sentences >= 1, summary
    reruns = report.connected + report.arrivals + report.new_sentences + report.page_switches
    assert report.reruns == reruns, summary  # nothing else reached the server
    assert report.first_map_checks == 3 and all(0 < s < 60 for s in report.first_map_s), summary
    assert summary["page_switch_p95_s"] is not None and summary["first_map_p95_s"] is not None, summary
    # each arrival fetched the page's scripts and the compressed plotly.js, as a new browser does
    assert summary["page_files"] and report.page_file_bytes >= 3 * (len(serving.plotly_gzip()) + _streamlits_scripts())


def test_the_browser_step_carries_the_view_in_the_hidden_input_or_else_as_the_elements_view():
    page = Page(ids={"attention_map": "$$ID-abc-attention_map"})
    step = STEPS["browser"]()
    assert step.local and not STEPS["boxes"]().local and not STEPS["element"]().local
    fallback = step.states(page, 2, 5)[0]
    assert fallback.id == "$$ID-abc-attention_map" and json.loads(fallback.json_value)["view"]["head"] == 5
    page.ids["browser_view"] = "$$ID-def-browser_view"
    state = step.states(page, 4, 7)[0]
    assert state.id == "$$ID-def-browser_view" and state.WhichOneof("value") == "string_value"
    view = {"layer": 4, "head": 7, "focus": -1, "query_start": 0, "key_start": 0, "map_view": "pretrained"}
    assert json.loads(state.string_value) == {"seq": 2, "view": view}


def test_a_map_of_another_students_sentence_counts_as_cross_talk(server, bundled):
    """The check can fail: a student that the server knows as student 0 expects student 1's sentence."""

    async def confused() -> Report:
        report = Report(1, 0, 0, 0)
        student = Student(0, server[0], STEPS["element"](), bundled, {})
        await student.connect()
        await student.change(report, 1, 2, sentence=student.sentence)
        student.number, student.sentence = 1, "Session 1.0: someone else's sentence."
        try:
            await student.change(report, 1, 3)
        except RuntimeError as exc:
            report.errors.append(str(exc))
        finally:
            await student.close()
        return report

    report = asyncio.run(confused())
    assert report.cross_talk == 1 and "another student" in report.errors[0], report.summary()


def test_two_replicas_behind_nginx_spread_the_class(replicas, bundled):
    report = run(sessions=4, seconds=8, interval=2, replicas=2, server=replicas, bundled=bundled)
    summary = report.summary()
    assert report.passed and report.cross_talk == 0, summary
    assert len(report.sessions_per_replica) == 2 and sum(report.sessions_per_replica.values()) >= 4, summary


def test_students_choose_heads_within_range():
    from class_load import _next_change

    rng = random.Random(0)
    seen = {_next_change(rng, 6, 12, 0, 0) for _ in range(200)}
    assert all(0 <= layer < 6 and 0 <= head < 12 for layer, head in seen) and len(seen) > 4


def test_the_element_step_reports_the_whole_view_as_the_browser_does():
    page = Page(ids={"attention_map": "$$ID-abc-attention_map"})
    step = STEPS["element"]()
    first, second = step.states(page, 2, 5)[0], step.states(page, 3, 0)[0]
    assert first.id == "$$ID-abc-attention_map" and first.WhichOneof("value") == "json_value"
    view = json.loads(second.json_value)["view"]
    assert view == {"layer": 3, "head": 0, "focus": -1, "query_start": 0, "key_start": 0, "seq": 2}


def test_decode_bundle_reads_the_map_elements_format():
    """ "AVM1", the header's length (uint32 LE), the JSON header, padding to 4 bytes, float32 LE arrays."""
    maps = np.arange(2 * 3 * 2 * 2, dtype="<f4").reshape(2, 3, 2, 2) / 10
    header = json.dumps({"layers": [4, 5], "heads": 3, "maps": {"offset": 0, "shape": [2, 3, 2, 2]}}).encode()
    payload = b"AVM1" + struct.pack("<I", len(header)) + header + b"\0" * (-(8 + len(header)) % 4) + maps.tobytes()
    found, decoded = decode_bundle(payload + np.ones(4, "<f4").tobytes())  # an overview may follow the maps
    assert found["layers"] == [4, 5]
    np.testing.assert_array_equal(decoded, maps.astype(np.float64))


def test_a_bundle_inside_the_elements_data_is_read_from_there_as_the_browser_does(bundled):
    """The browser paints a bundle that came inside the run's data (``inline``) and never asks the server for it;
    a bundle named without its bytes is fetched once."""
    from attention_viz.figures import bundles

    maps = np.arange(2 * 3 * 2 * 2, dtype="<f4").reshape(2, 3, 2, 2) / 100
    header = {"layers": [0, 1], "heads": 3, "y": ["a", "b"], "maps": {"offset": 0, "shape": [2, 3, 2, 2]}}
    payload = bundles.pack(header, [maps])
    student, fetched = Student(0, "http://127.0.0.1:1", STEPS["browser"](), bundled, {}), []
    student._get = lambda path: fetched.append(path) or payload
    view = {"layer": 1, "head": 2}
    inline = json.dumps({"bundle": "m/one", "inline": base64.b64encode(payload).decode(), "view": view})
    labels, shown = asyncio.run(student._element_map(inline, 1, 2))
    assert fetched == [] and labels == ["a", "b"]
    np.testing.assert_allclose(shown, maps[1, 2], atol=1e-7)
    named = json.dumps({"bundle": "m/two", "inline": None, "view": view})
    for _ in range(2):
        asyncio.run(student._element_map(named, 1, 2))
    assert fetched == ["/m/two"]  # fetched once, then held
