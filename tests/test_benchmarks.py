"""The benchmark suite cannot rot: ``python -m benchmarks --quick`` runs every figure and writes valid results.

Speed is not asserted here (the machines are shared); what the suite measures is: every row of the table in
benchmarks/README.md is there, each measured row is consistent (ratio = ours / baseline), a head change runs
no model forward, and the from-scratch encoder still matches transformers.

The suite runs in this process (its ``main`` is what ``python -m benchmarks`` calls): torch, transformers
and the model are loaded already, and what must start cold (the server, the bare loader) runs in
processes of its own anyway.
"""

import json

from benchmarks.__main__ import main


def test_quick_suite_runs_and_writes_valid_results(tmp_path, capsys):
    output = tmp_path / "results.json"
    status = main(["--quick", "--output", str(output)])
    done = capsys.readouterr()
    assert status == 0, done.err[-3000:]
    results = json.loads(output.read_text())
    assert results["mode"] == "quick"
    assert results["machine"]["cpus"] >= 1 and results["versions"]["torch"] and results["date"]
    rows = results["results"]
    failed = [row for row in rows if row["note"].startswith("failed")]
    assert not failed, failed  # a section that raised: its note says why
    assert {row["id"] for row in rows} == {"1", "2", "3", "4", "5", "6", "7", "8", "9", "11", "12", "13", "14", "19"}
    for row in rows:
        if row["figure"].startswith("bytes of one head step"):  # Compare's map sends none now: 0 is a result
            assert row["ours"] is not None and row["ours"] >= 0, row
        elif row["id"] != "6":  # corpus statistics may be missing (skipped with a note)
            assert row["ours"] is not None and row["ours"] > 0, row
        if row["ratio"] is not None:
            assert abs(row["ratio"] - row["ours"] / row["baseline"]) <= 1e-9 * row["ratio"], row
    head_changes = [row for row in rows if row["id"] == "3"]
    assert len(head_changes) == 2 and all(row["baseline"] == 0 for row in head_changes)  # 0 forwards
    assert all(row["ours"] > 0 and len(row["samples"]["seconds"]) >= 3 for row in head_changes)
    importance = next(row for row in rows if row["id"] == "8")
    assert importance["samples"]["max_abs_difference"] <= 1e-6  # the same values as one forward per head
    inside = next(row for row in rows if row["id"] == "9")
    assert inside["baseline"] == 0 and len(inside["samples"]["seconds"]) >= 3  # no forward on a head change
    felt = [row for row in rows if row["id"] in {"11", "12", "13", "14"}]  # in Chromium: a drawing is the baseline
    assert len(felt) == 5 and all(row["ours_unit"] == "ms" and row["baseline"] > 0 for row in felt), felt
    assert all(len(row["samples"]["ms"]) >= 1 for row in felt)
    encoder = next(row for row in rows if row["id"] == "2")
    assert encoder["samples"]["max_abs_difference"] <= 1e-5
    sizes = {row["size"] for row in rows if row["id"] == "4"}
    assert sizes == {"32 tokens", "128 tokens", "512 tokens"}
    header = done.out.splitlines()[0]
    assert header.startswith("#") and "ratio" in header and "target" in header
    assert f"written to {output}" in done.out


def test_the_extraction_paths_row_measures_equal_bits(tiny_model):
    """#16 (on request): the fast path, the reference and the variants it times give the same bits."""
    from benchmarks.harness import Settings
    from benchmarks.paths import path_rows

    rows = path_rows(tiny_model, Settings(quick=True, warmup=0, repeats=1))
    assert [row.figure.split(":")[0] for row in rows] == ["extraction", "encoder"]  # 64 positions: 16 tokens
    assert all(row.samples["same_bits"] and row.ours > 0 and row.baseline > 0 for row in rows), rows
    assert all(abs(row.ratio - row.ours / row.baseline) <= 1e-12 for row in rows)
