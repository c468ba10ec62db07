"""Corpus statistics on Ray: a local cluster of 2 CPUs that the module starts itself, a tiny random BERT."""

from __future__ import annotations

import io
import os
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import ray

from attention_viz.analysis import corpus, distributed
from attention_viz.cli import main
from attention_viz.models.loading import load_model

TEXTS = corpus.parse_corpus(corpus.bundled_corpus())[:24]  # English and Chinese, with sentence pairs
BATCH = 4


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def single(tiny_model_dir):
    """The single-process run on the same batches, with importance and divergence."""
    loaded = load_model(tiny_model_dir)
    return corpus.corpus_statistics(loaded, TEXTS, BATCH, importance=True, divergence=True)


def _assert_same(ours: corpus.CorpusResult, single: corpus.CorpusResult) -> None:
    numbers = single.statistics.select_dtypes("number").columns
    assert "importance" in numbers and "entropy" in numbers and "a_to_b" in numbers
    np.testing.assert_allclose(ours.statistics[numbers], single.statistics[numbers], rtol=0, atol=1e-9)
    assert np.isnan(ours.statistics[numbers]).equals(np.isnan(single.statistics[numbers]))
    assert list(ours.statistics["tags"]) == list(single.statistics["tags"])
    np.testing.assert_allclose(ours.divergence, single.divergence, rtol=0, atol=1e-9)
    counts = ("num_texts", "num_skipped", "num_tokens", "num_truncated")
    assert [getattr(ours, c) for c in counts] == [getattr(single, c) for c in counts]


def _ray_workers() -> list[int]:
    """Processes of this test's actors (Ray titles them ``ray::_Worker``), under this process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(b"ray::_Worker"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return sorted(found)


def _killing_one_worker(calls: list):
    """A progress callback that kills one worker (SIGKILL) once the first part is done: others still run."""

    def progress(done: float, total: int) -> None:
        calls.append(done)
        if done and len(calls) == 2:
            workers = _ray_workers()
            assert workers, "no Ray worker process found"
            os.kill(workers[0], signal.SIGKILL)

    return progress


def test_parts_are_whole_batches():
    assert distributed.parts(10, 4, 5) == [(0, 8), (8, 10)]
    assert distributed.parts(3, 4, 1) == [(0, 3)]
    assert distributed.default_texts_per_part(1000, 16, 2) == 125


def test_equal_to_the_single_process_run(cluster, tiny_model_dir, single):
    calls = []
    ours = distributed.corpus_statistics_on_ray(
        TEXTS,
        tiny_model_dir,
        batch_size=BATCH,
        texts_per_part=6,  # rounded up to 8: three parts
        importance=True,
        divergence=True,
        progress=lambda done, total: calls.append((done, total)),
    )
    _assert_same(ours, single)
    assert calls[0] == (0, 24) and calls[-1] == (24, 24) and len(calls) == 4


def test_a_worker_killed_mid_run_is_restarted_and_the_result_is_the_same(cluster, tiny_model_dir, single):
    calls = []
    ours = distributed.corpus_statistics_on_ray(
        TEXTS,
        tiny_model_dir,
        batch_size=BATCH,
        texts_per_part=4,
        importance=True,
        divergence=True,
        progress=_killing_one_worker(calls),
        retries=2,
    )
    _assert_same(ours, single)
    assert calls[-1] == 24


def test_a_worker_lost_past_its_retries_stops_the_run_with_a_clear_message(cluster, tiny_model_dir):
    calls = []
    with pytest.raises(distributed.DistributedError, match=r"texts \d+-\d+: the Ray worker running them was lost"):
        distributed.corpus_statistics_on_ray(
            TEXTS, tiny_model_dir, batch_size=BATCH, texts_per_part=4, progress=_killing_one_worker(calls), retries=0
        )
    assert calls[-1] < 24  # stopped: no result made of fewer parts


def test_cli_ray_prints_the_single_process_table(cluster, capsys, tmp_path, tiny_model_dir):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"{a}\t{b}\n" if b else f"{a}\n" for a, b in TEXTS), encoding="utf-8")
    args = ["stats", str(path), "--model", tiny_model_dir, "--batch-size", str(BATCH)]
    assert main(args) == 0
    alone = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert main([*args, "--ray", "--ray-workers", "2", "--max-texts", "24"]) == 0
    out, err = capsys.readouterr()
    on_ray = pd.read_csv(io.StringIO(out))
    numbers = alone.select_dtypes("number").columns
    np.testing.assert_allclose(on_ray[numbers], alone[numbers], rtol=0, atol=1e-7)  # the CSV keeps 8 digits
    assert "stats" in err  # the progress bar, as without --ray


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--max-texts", "5"], "--max-texts is for a Ray run: add --ray"),
        (["--ray", "--max-texts", "5"], "the corpus has 24 texts; the limit is 5: raise it with --max-texts"),
        (["--ray", "--max-tokens", "0"], "--max-tokens must be at least 1"),
    ],
)
def test_cli_ray_limits_come_from_the_command_line(capsys, tmp_path, tiny_model_dir, extra, message):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"{a}\n" for a, _ in TEXTS), encoding="utf-8")
    assert main(["stats", str(path), "--model", tiny_model_dir, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_the_atlas_on_ray_equals_the_single_process_atlas_exactly(cluster, tiny_model_dir, tmp_path, capsys):
    from attention_viz.analysis import atlas

    loaded = load_model(tiny_model_dir)
    alone = atlas.build_atlas(loaded, TEXTS, top=6, sample=5, seed=2, batch_size=BATCH)
    assert atlas.part_spans(len(TEXTS), BATCH) == [(0, 16), (16, 24)]  # two parts, on two actors
    calls = []
    ours = distributed.atlas_on_ray(
        TEXTS,
        tiny_model_dir,
        batch_size=BATCH,
        top=6,
        sample=5,
        seed=2,
        workers=2,
        progress=lambda done, total: calls.append((done, total)),
    )
    pd.testing.assert_frame_equal(ours.events, alone.events, check_exact=True)
    pd.testing.assert_frame_equal(ours.heads, alone.heads, check_exact=True)
    assert ours.texts == alone.texts and ours.options == alone.options
    assert (ours.num_texts, ours.num_tokens) == (alone.num_texts, alone.num_tokens)
    assert calls[0] == (0, 24) and calls[-1] == (24, 24)
    corpus_file = tmp_path / "corpus.txt"
    corpus_file.write_text("\n".join(a if b is None else f"{a}\t{b}" for a, b in TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / "atlas.parquet"
    args = ["atlas", str(corpus_file), "--model", tiny_model_dir, "--batch-size", str(BATCH), "--out", str(out)]
    assert main([*args, "--top", "6", "--sample", "5", "--seed", "2", "--ray", "--ray-workers", "2"]) == 0
    capsys.readouterr()
    pd.testing.assert_frame_equal(atlas.read_atlas(out).events, alone.events, check_exact=True)
