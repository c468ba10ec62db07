"""#15, a class: 40 browser sessions for 5 minutes, each changing the head every 5 s and typing a new
sentence every 60 s, against one ``streamlit run app.py`` and against 2 replicas behind nginx
(``deploy/``); driven by ``tests/load.py``, which checks every map against the core's own extraction.

Baseline in the same run: one session alone for 1 minute on one server, the same pace. Not in the default
run (about 12 minutes): ``python -m benchmarks --only 15``.
"""

from __future__ import annotations

import sys

from benchmarks.harness import ROOT, Row, Settings

sys.path.insert(0, str(ROOT / "tests"))
import load  # tests/load.py

SESSIONS, SECONDS, INTERVAL_S, NEW_SENTENCE_S = 40, 300, 5, 60


def class_rows(settings: Settings) -> list[Row]:
    from attention_viz.models.loading import load_model

    bundled = load_model()
    sessions, seconds = (4, 30) if settings.quick else (SESSIONS, SECONDS)
    alone = load.run(1, 60 if not settings.quick else 20, INTERVAL_S, NEW_SENTENCE_S, bundled=bundled).summary()
    rows = []
    for replicas in (0, 2):
        report = load.run(sessions, seconds, INTERVAL_S, NEW_SENTENCE_S, replicas, bundled=bundled)
        found = report.summary()
        p95 = found["head_switch_p95_s"]
        rows.append(
            Row(
                id="15",
                figure="a class: p95 head change (a box choice to its own map), head every 5 s, sentence every 60 s",
                size=f"{sessions} sessions, {found['seconds']:.0f} s, "
                + (f"{replicas} replicas" if replicas else "1 server"),
                ours=p95,
                ours_unit="s",
                baseline=alone["head_switch_p95_s"],
                baseline_unit="s",
                baseline_name="one session alone on one server, same pace",
                ratio=p95 / alone["head_switch_p95_s"] if p95 and alone["head_switch_p95_s"] else None,
                target="0 errors, p95 ≤ 1 s, own sentence always, RSS growth ≤ 10%",
                passed=bool(found["passed"] and p95 is not None and p95 <= 1.0),
                note=(
                    f"{len(report.failures)} failures, {found['checks']} maps checked, RSS growth "
                    f"{100 * found['rss_growth_after_round_5']:.1f}%, server CPU "
                    f"{found['server_cpu_s_per_session_minute']} s per session-minute, generator CPU "
                    f"{found['generator_cpu_s']} s"
                ),
                samples={"summary": found, "alone": alone},
            )
        )
    return rows
