"""Run the benchmark suite: ``python -m benchmarks [--quick] [--only 1,3] [--output FILE]``.

Each figure is measured next to a baseline in the same run (median after a warm-up, ours and the
baseline interleaved), printed as a table of ratios against the targets (benchmarks/README.md), and written with
the machine, versions and date to ``benchmarks/results/<date>-<mode>.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the bundled model only; never ask the hub


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: fewer sizes and repeats (< 1 min)")
    parser.add_argument(
        "--only",
        default="1,2,3,4,5,6,7,8,9,11,12,13,14,19",
        help="comma-separated figure numbers (default 1-9, 11-14 and 19; on request: 10, the other families at "
        "base size; 15, a class of 40 sessions for 5 minutes on 1 server and on 2 replicas; 16, the two "
        "extraction paths and the encoder's in-place variant; 17, a class of 40 and 200 at the server, 1 server "
        "and 2 replicas; 18, corpus statistics on a local Ray cluster; 20, the first map and a page switch beside "
        "Streamlit's own floor)",
    )
    parser.add_argument("--output", type=Path, help="results file (default benchmarks/results/<date>-<mode>.json)")
    args = parser.parse_args(argv)
    wanted = {part.strip() for part in args.only.split(",")}

    from benchmarks.harness import Row, Settings, table, write_results

    started = time.monotonic()
    settings = Settings.make(args.quick)
    from attention_viz.models.loading import BUNDLED_MODEL
    from attention_viz.ui import internals
    from attention_viz.ui.server import cache

    internals.quiet_missing_context()
    loaded = cache.model(BUNDLED_MODEL)  # the app's own cached copy: the AppTest sessions reuse it
    rows: list[Row] = []
    durations: dict[str, float] = {}

    def section(number: str, name: str, fn) -> None:
        if number not in wanted:
            return
        print(f"#{number} {name}…", file=sys.stderr, flush=True)
        start = time.monotonic()
        try:
            rows.extend(fn())
        except Exception as exc:  # one broken figure must not hide the others
            traceback.print_exc()
            rows.append(Row(number, name, "", None, "", note=f"failed: {type(exc).__name__}: {str(exc)[:300]}"))
        durations[number] = round(time.monotonic() - start, 1)
        print(f"#{number} took {durations[number]:.0f} s", file=sys.stderr, flush=True)

    from benchmarks import core

    section("1", "extraction", lambda: core.extraction_rows(loaded, settings))
    section("2", "from-scratch encoder forward", lambda: core.encoder_rows(loaded, settings))
    sessions = {}
    if wanted & {"3", "4"}:
        from benchmarks import apptest

        def head_change():
            found, opened = apptest.head_change_rows(loaded, settings)
            sessions.update(opened)
            return found

        section("3", "head change", head_change)
        section("4", "bytes to the browser", lambda: apptest.bytes_rows(loaded, settings, sessions))
    if "5" in wanted or "7" in wanted:
        from benchmarks import server

        section(
            "5",
            "cold start and peak memory",
            lambda: server.cold_start_and_memory(loaded.tokenizer, settings),
        )
    section("6", "corpus statistics", lambda: core.corpus_rows(loaded, settings))
    if "8" in wanted:
        from benchmarks import importance

        section("8", "head importance", lambda: importance.importance_rows(loaded, settings))
    if "9" in wanted:
        from benchmarks import apptest

        section("9", "Inside a head", lambda: apptest.inside_rows(loaded, settings))
    felt_wanted = sorted(wanted & {"11", "12", "13", "14", "19"}, key=int)
    if felt_wanted:
        from benchmarks import felt

        def felt_section():
            return [row for row in felt.felt_rows(loaded.tokenizer, settings) if row.id in wanted]

        section(felt_wanted[0], "felt in Chromium (#11-#14, #19)", felt_section)
    if "15" in wanted:
        from benchmarks import classroom

        section("15", "a class of 40 sessions", lambda: classroom.class_rows(settings))
    if "17" in wanted:
        from benchmarks import server_class

        section("17", "a class at the server", lambda: server_class.server_class_rows(settings))
    if "20" in wanted:
        from benchmarks import pages

        section("20", "pages and the first map beside Streamlit's floor", lambda: pages.page_rows(settings))
    if "18" in wanted:
        from benchmarks import distributed

        section("18", "corpus statistics on a local Ray cluster", lambda: distributed.ray_rows(loaded, settings))
    if "10" in wanted:
        from benchmarks import families

        section("10", "other families (RoBERTa, GPT-2)", lambda: families.family_rows(settings))
    if "16" in wanted:
        from benchmarks import paths

        section("16", "extraction paths", lambda: paths.path_rows(loaded, settings))
    rows.sort(key=lambda row: int(row.id))
    path = write_results(rows, settings, started, args.output, durations)
    print(table(rows))
    print(f"\nwritten to {path} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
