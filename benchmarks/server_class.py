"""#17, a class measured at the server: simulated students that speak Streamlit's protocol (tests/class_load.py),
no browsers, so the load generator costs a few percent of a core and the figure is the server's.

Each student does what the browser sends (``--step browser``): it opens the page (its first map, the opening
example, timed while the students arrive 8 at a time), sets a sentence of its own, then every 5 s makes a change: a
layer or head step the browser draws from the data it holds (nothing sent: no server cost), a new sentence (one
change in 12: a rerun that carries the student's view), or a switch to All heads and back (one in 24). On arriving,
each student also fetches what a new browser fetches (the scripts and styles the page names, then plotly.js; since
2026-12-04). Each change that reaches the server is timed from the message sent to the page's answer (the map's data
for Compare), and every map is checked against the core's own extraction for that student's sentence and head.
Classes of 40 and 200 on one ``streamlit run app.py``, and 200 on 2 replicas behind nginx (``deploy/``). Baseline in
the same run: one student alone on one server, the same pace. The load average (1 minute) is recorded before and
after each class: the machine may be shared. On request: ``python -m benchmarks --only 17`` (about 20 minutes;
``ATTENTION_VIZ_CLASS_SECONDS`` shortens each class).
"""

from __future__ import annotations

import os
import sys

from benchmarks.harness import ROOT, Row, Settings

sys.path.insert(0, str(ROOT / "tests"))
import class_load  # tests/class_load.py

SECONDS, INTERVAL_S = 300, 5
CLASSES = ((40, 0), (200, 0), (200, 2))  # (students, replicas; 0 is one server without nginx)
TARGET_S = {40: 0.5, 200: 1.0}  # p95 of every change that reaches the server, by class size
FIRST_MAP_TARGET_S = 5.0  # p95 of each student's first map while they arrive 8 at a time
STEP = "browser"
PAGE_FILES = True  # each student also fetches what a new browser fetches: the page's scripts, then plotly.js


def server_class_rows(settings: Settings) -> list[Row]:
    from attention_viz.models.loading import load_model

    bundled = load_model()
    seconds = 20 if settings.quick else float(os.environ.get("ATTENTION_VIZ_CLASS_SECONDS", SECONDS))
    classes = ((4, 0), (4, 2)) if settings.quick else CLASSES
    alone = class_load.run(1, min(seconds, 60), INTERVAL_S, bundled=bundled, step=STEP, page_files=PAGE_FILES)
    alone = alone.summary()
    rows = []
    for sessions, replicas in classes:
        found = class_load.run(
            sessions, seconds, INTERVAL_S, replicas=replicas, bundled=bundled, step=STEP, page_files=PAGE_FILES
        )
        found = found.summary()
        p95, target = found["all_p95_s"], TARGET_S.get(sessions, TARGET_S[200])
        first = found["first_map_p95_s"]
        where = f"{replicas} replicas behind nginx" if replicas else "1 server"
        rows.append(
            Row(
                id="17",
                figure="a class at the server: per change that reaches it, message sent → the page's answer (p95)",
                size=f"{sessions} students, {found['seconds']:.0f} s, {where}",
                ours=p95,
                ours_unit="s",
                baseline=alone["all_p95_s"],
                baseline_unit="s",
                baseline_name="one student alone on one server, same pace",
                ratio=p95 / alone["all_p95_s"] if p95 and alone["all_p95_s"] else None,
                target=(
                    f"p95 ≤ {target} s, first map p95 ≤ {FIRST_MAP_TARGET_S} s, 0 errors, 0 cross-talk, "
                    "RSS growth ≤ 10 %"
                ),
                passed=bool(
                    found["passed"]
                    and p95 is not None
                    and p95 <= target
                    and first is not None
                    and first <= FIRST_MAP_TARGET_S
                    and found["rss_growth"] is not None
                    and abs(found["rss_growth"]) <= class_load.RSS_TOLERANCE
                ),
                note=(
                    f"{found['browser_steps']} steps drawn in the browser (nothing sent); new sentence p50 "
                    f"{found['new_sentence_p50_s']} s, p95 {found['new_sentence_p95_s']} s ({found['new_sentences']}); "
                    f"page switch p50 {found['page_switch_p50_s']} s, p95 {found['page_switch_p95_s']} s "
                    f"({found['page_switches']}); first map p50 {found['first_map_p50_s']} s, p95 {first} s, then the "
                    f"student's own sentence p95 {found['arrival_sentence_p95_s']} s; "
                    f"{found['errors']} errors {found['errors_by_kind']}, {found['cross_talk']} cross-talk, RSS "
                    f"growth {_percent(found['rss_growth'])}, server CPU {found['server_cpu_s_per_session_minute']} "
                    f"s per student-minute, generator CPU {found['generator_cpu_s']} s, load average "
                    f"{found['load_average']}"
                ),
                samples={"summary": found, "alone": alone},
            )
        )
    return rows


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} %"
