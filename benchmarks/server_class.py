"""#17, a class measured at the server: simulated students that speak Streamlit's protocol (tests/class_load.py),
no browsers, so the load generator costs a few percent of a core and the figure is the server's.

Each student sets a sentence of its own, then every 5 s changes the layer or the head (one change in 12
types a new sentence), and times each change from the message sent to the map's data received; every map is
checked against the core's own extraction for that student's sentence and head. Classes of 40 and 200 on one
``streamlit run app.py``, and 200 on 2 replicas behind nginx (``deploy/``). Baseline in the same run: one
student alone on one server, the same pace. The load average (1 minute) is recorded before and after each
class: the machine may be shared. On request: ``python -m benchmarks --only 17`` (about 20 minutes;
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
TARGET_S = 1.0


def server_class_rows(settings: Settings) -> list[Row]:
    from attention_viz.models.loading import load_model

    bundled = load_model()
    seconds = 20 if settings.quick else float(os.environ.get("ATTENTION_VIZ_CLASS_SECONDS", SECONDS))
    classes = ((4, 0), (4, 2)) if settings.quick else CLASSES
    alone = class_load.run(1, min(seconds, 60), INTERVAL_S, bundled=bundled).summary()
    rows = []
    for sessions, replicas in classes:
        found = class_load.run(sessions, seconds, INTERVAL_S, replicas=replicas, bundled=bundled).summary()
        p95 = found["change_p95_s"]
        where = f"{replicas} replicas behind nginx" if replicas else "1 server"
        rows.append(
            Row(
                id="17",
                figure="a class at the server: per change, message sent → the map's data received (p95)",
                size=f"{sessions} students, {found['seconds']:.0f} s, {where}",
                ours=p95,
                ours_unit="s",
                baseline=alone["change_p95_s"],
                baseline_unit="s",
                baseline_name="one student alone on one server, same pace",
                ratio=p95 / alone["change_p95_s"] if p95 and alone["change_p95_s"] else None,
                target="p95 ≤ 1 s, 0 errors, 0 cross-talk, RSS growth ≤ 10 %",
                passed=bool(
                    found["passed"]
                    and p95 is not None
                    and p95 <= TARGET_S
                    and found["rss_growth"] is not None
                    and abs(found["rss_growth"]) <= class_load.RSS_TOLERANCE
                ),
                note=(
                    f"p50 {found['change_p50_s']} s, {found['changes']} changes and {found['new_sentences']} "
                    f"sentences (p95 {found['new_sentence_p95_s']} s), {found['errors']} errors, "
                    f"{found['cross_talk']} cross-talk, RSS growth {_percent(found['rss_growth'])}, server CPU "
                    f"{found['server_cpu_s_per_session_minute']} s per session-minute, generator CPU "
                    f"{found['generator_cpu_s']} s, load average {found['load_average']}"
                ),
                samples={"summary": found, "alone": alone},
            )
        )
    return rows


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} %"
