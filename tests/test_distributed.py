"""Corpus statistics on Ray: a local cluster of 2 CPUs that the module starts itself, a tiny random BERT.

The command-line tests that need a cluster of their own (an address, Ray Client, Ctrl+C) start one head node
with ``ray start`` on loopback, in a temp dir of its own so that no other cluster on the machine sees it, and
run ``python -m attention_viz`` in a subprocess against it. Every wait is bounded, so a hang fails a test.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import ray

from attention_viz.analysis import corpus, distributed
from attention_viz.cli import main
from attention_viz.models.loading import load_model

TEXTS = corpus.parse_corpus(corpus.bundled_corpus())[:24]  # English and Chinese, with sentence pairs
BATCH = 4
ROOT = Path(__file__).resolve().parents[1]
MARKER = "ATTENTION_VIZ_TEST_RAY_HEAD"  # in the environment of every process of the head node below
CONNECT_S = 240  # --ray-timeout for a cluster that answers: a loaded machine starts Ray Client's server slowly


def _start_cluster() -> None:
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)


@pytest.fixture(scope="module")
def cluster():
    _start_cluster()
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


def _ray_workers(marker: str | None = None) -> list[int]:
    """Processes of this test's actors (Ray titles them ``ray::_Worker``); with ``marker``, only those of the
    head node whose processes have it in their environment, without, only those of no such head node (the
    local cluster's: a head node's actors may still be ending)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if not (entry / "cmdline").read_bytes().startswith(b"ray::_Worker"):
                    continue
                environ = (entry / "environ").read_bytes().split(b"\0")
                marked = [item for item in environ if item.startswith(f"{MARKER}=".encode())]
                if (f"{MARKER}={marker}".encode() in marked) if marker is not None else not marked:
                    found.append(int(entry.name))
            except OSError:
                continue
    return sorted(found)


def _within(seconds: float, call: Callable[[], object]) -> object:
    """``call()`` on a thread, its result or its exception; a call still running after ``seconds`` fails the
    test (it is left behind, and the cluster with it)."""
    outcome = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s: it hangs")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _descends_from_this_process(pid: int) -> bool:
    """Whether ``pid`` was started (through any number of parents) by this test process: the local cluster's
    processes are, a head node's or another run's are not."""
    while pid > 1:
        try:
            stat = (Path("/proc") / str(pid) / "stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent: the field after the state
        if pid == os.getpid():
            return True
    return False


def _killing_one_worker(calls: list):
    """A progress callback that kills one worker (SIGKILL) of this process's own cluster once the first part
    is done: others still run."""

    def progress(done: float, total: int) -> None:
        calls.append(done)
        if done and len(calls) == 2:
            workers = [pid for pid in _ray_workers() if _descends_from_this_process(pid)]
            assert workers, "no Ray worker process found"
            # one running a part (Ray titles it ray::_Worker.<method>), else the newest: an actor still starting
            # may never be given a part, and an earlier run's actors may still be ending
            running = [
                pid for pid in workers if b".__init__" not in (Path("/proc") / str(pid) / "cmdline").read_bytes()
            ]
            os.kill(max(running or workers), signal.SIGKILL)

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
    try:
        # the newest actor may be running a part or still starting (it takes parts once started): either stops
        lost = r"(texts \d+-\d+: the Ray worker running them|a Ray worker starting) was lost 1 time"
        with pytest.raises(distributed.DistributedError, match=lost):
            killing = _killing_one_worker(calls)
            distributed.corpus_statistics_on_ray(
                TEXTS, tiny_model_dir, batch_size=BATCH, texts_per_part=4, progress=killing, retries=0
            )
    finally:  # a fresh cluster for the next tests: the raylet's late notice of the killed worker (on the driver's
        ray.shutdown()  # stdout) would land in the next test's output, inside a table the CLI prints
        _start_cluster()
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


def test_more_workers_than_the_cluster_has_cpus_are_refused_before_any_starts(cluster, tiny_model_dir):
    def run():
        return distributed.corpus_statistics_on_ray(TEXTS, tiny_model_dir, batch_size=BATCH, workers=4)

    with pytest.raises(distributed.DistributedError, match=r"4 Ray worker\(s\) of 1 CPU need 4 CPUs") as caught:
        _within(120, run)  # 6 parts: 2 actors started, the 2 that could not held parts for ever
    assert isinstance(caught.value, distributed.NotEnoughCPUsError)
    assert (caught.value.workers, caught.value.cpus, caught.value.capacity) == (4, 2, 2)


def test_cli_refuses_more_workers_than_cpus_with_one_line(cluster, capsys, tmp_path, tiny_model_dir):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"{a}\n" for a, _ in TEXTS), encoding="utf-8")
    args = ["stats", str(path), "--model", tiny_model_dir, "--batch-size", str(BATCH), "--ray", "--ray-workers", "4"]
    assert _within(120, lambda: main(args)) == 2  # 6 parts for 4 workers, 2 of which could never start
    assert capsys.readouterr().err == (
        "error: --ray-workers 4 needs 4 CPUs and the Ray cluster has 2: give --ray-workers 2 or fewer\n"
    )


def test_a_worker_waiting_for_a_cpu_takes_no_part(cluster, tiny_model_dir, single):
    """One of the 2 CPUs is held by another actor for the whole run: the second worker never starts, and the
    parts all run on the first instead of waiting on the second."""

    @ray.remote(num_cpus=1)
    class Holder:
        def ready(self) -> bool:
            return True

    holder = Holder.remote()
    try:
        assert ray.get(holder.ready.remote(), timeout=120)
        calls = []
        ours = _within(
            300,
            lambda: distributed.corpus_statistics_on_ray(
                TEXTS,
                tiny_model_dir,
                batch_size=BATCH,
                workers=2,
                texts_per_part=4,
                importance=True,
                divergence=True,
                progress=lambda done, total: calls.append(done),
            ),
        )
    finally:
        ray.kill(holder)
    _assert_same(ours, single)
    assert calls[-1] == 24 and len(calls) == 7  # (0, 24), then each of the 6 parts


def test_the_ray_extra_installs_ray_client():
    """``ray://`` addresses need Ray Client (grpcio): the extra and the dev pins install it."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extras["ray"] == ["ray[client]==2.60.0"]
    pins = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    assert "ray[client]==2.60.0" in pins and "ray==2.60.0" not in pins
    import grpc  # noqa: F401  (installed with the extra)


# --- the command line against a cluster of its own ----------------------------------------------------------


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def _head_processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"{MARKER}={marker}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture(scope="module")
def head_node():
    """A head node of 2 CPUs on loopback with a Ray Client server; stopped by the ids of its processes (``ray
    stop`` would stop every cluster on the machine)."""
    temp = tempfile.mkdtemp(prefix="rv", dir="/tmp")  # short: Ray's socket paths must stay under 108 characters
    gcs, client, dashboard = _free_ports(3)
    # no token: Ray turns token auth on for a head node when a token lies in ~/.ray (a local ray.init leaves one)
    # and off for a driver given an address, which the head node would then refuse
    env = _cli_env() | {MARKER: temp, "RAY_AUTH_MODE": "disabled"}
    command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--node-ip-address", "127.0.0.1"]
    command += ["--port", str(gcs), "--ray-client-server-port", str(client), "--dashboard-port", str(dashboard)]
    command += ["--num-cpus", "2", "--temp-dir", temp, "--include-dashboard", "false", "--disable-usage-stats"]
    try:
        subprocess.run(command, env=env, cwd=temp, capture_output=True, timeout=240, check=True)
        yield SimpleNamespace(gcs=f"127.0.0.1:{gcs}", client=f"ray://127.0.0.1:{client}", marker=temp)
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in _head_processes(temp):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    continue
            deadline = time.monotonic() + 20
            while _head_processes(temp) and time.monotonic() < deadline:
                time.sleep(0.5)
        shutil.rmtree(temp, ignore_errors=True)


def _corpus_file(folder: Path, copies: int = 1) -> str:
    path = folder / "corpus.txt"
    path.write_text("".join(f"{a}\t{b}\n" if b else f"{a}\n" for a, b in TEXTS) * copies, encoding="utf-8")
    return str(path)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "attention_viz", "stats", *args]


def _cli_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")} | {
        "PYTHONPATH": str(ROOT)
    }


@pytest.mark.parametrize("silent", [False, True], ids=["refused", "silent"])
def test_cli_an_unreachable_cluster_is_one_error_line_in_bounded_time(tmp_path, tiny_model_dir, silent):
    """A refused port fails at once; a port where nothing answers fails after ``--ray-timeout`` seconds, not
    after Ray's retries (about ten minutes)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    if silent:
        listener.listen(8)  # accepts connections and never answers
    port = listener.getsockname()[1]
    if not silent:
        listener.close()  # nothing listens there now
    try:
        args = _cli(
            _corpus_file(tmp_path), "--model", tiny_model_dir, "--ray", f"127.0.0.1:{port}", "--ray-timeout", "3"
        )
        done = subprocess.run(args, cwd=ROOT, env=_cli_env(), capture_output=True, text=True, timeout=240)
    finally:
        listener.close()
    assert done.returncode == 2 and done.stdout == ""
    expected = (
        f"error: the Ray cluster at 127.0.0.1:{port} did not answer within 3 s: is the address right?"
        if silent
        else f"error: cannot reach the Ray cluster at 127.0.0.1:{port}: Connection refused; is it running, and is "
        "this its address?"
    )
    assert expected in done.stderr.splitlines()
    assert "Traceback" not in done.stderr


def test_cli_on_a_ray_client_address(head_node, tmp_path, tiny_model_dir, single):
    """``--ray ray://host:port`` (Ray Client) runs on the head node's workers and prints the single run's table."""
    args = _cli(_corpus_file(tmp_path), "--model", tiny_model_dir, "--batch-size", str(BATCH), "--importance")
    args += ["--ray", head_node.client, "--ray-workers", "2", "--format", "json", "--ray-timeout", str(CONNECT_S)]
    done = subprocess.run(args, cwd=ROOT, env=_cli_env(), capture_output=True, text=True, timeout=400)
    if done.returncode and "Starting Ray client server failed" in done.stderr:
        # The head node starts a Ray Client server process per connection; on a machine busy with the rest of the
        # suite that process has failed to start (Ray's own error, before any of our code runs): once more.
        done = subprocess.run(args, cwd=ROOT, env=_cli_env(), capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    on_ray = pd.DataFrame(json.loads(done.stdout)["heads"])
    numbers = single.statistics.select_dtypes("number").columns
    assert "importance" in numbers and "a_to_b" in numbers
    np.testing.assert_allclose(on_ray[numbers].astype(float), single.statistics[numbers], rtol=0, atol=1e-7)


def test_cli_ctrl_c_stops_cleanly_and_frees_the_workers(head_node, tmp_path, tiny_model_dir):
    """Ctrl+C (SIGINT to the process group, as a terminal sends it) once parts are running: one line, exit 130,
    no traceback, nothing on stdout, and the run's actors are gone from the cluster."""
    copies = 300  # 7,200 texts with importance: eight parts of 900, so the interrupt lands mid-run (2,400 texts,
    # parts of 300, could all finish between the first part's line and the interrupt on a loaded machine)
    args = _cli(_corpus_file(tmp_path, copies), "--model", tiny_model_dir, "--batch-size", str(BATCH), "--importance")
    args += [
        "--ray",
        head_node.gcs,
        "--ray-workers",
        "2",
        "--max-texts",
        str(24 * copies),
        "--max-tokens",
        str(1_000_000),
        "--ray-timeout",
        str(CONNECT_S),
    ]
    process = subprocess.Popen(
        args, cwd=ROOT, env=_cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    err = bytearray()

    def read() -> None:
        for chunk in iter(lambda: process.stderr.read1(4096), b""):
            err.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 400
        done_part = re.compile(rb"\| [1-9]\d*/%d \[" % (24 * copies))
        while not done_part.search(bytes(err)):  # a part is done, others run
            assert process.poll() is None, bytes(err).decode(errors="replace")[-2000:]
            assert time.monotonic() < deadline, "no part finished"
            time.sleep(0.2)
        assert _ray_workers(head_node.marker)
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    reader.join(10)
    out, text = process.stdout.read(), bytes(err).decode(errors="replace")
    assert code == 130, text[-2000:]
    assert out == b"", out.decode(errors="replace")
    assert "Traceback" not in text, text
    assert text.splitlines()[-1].split("\r")[-1].strip() == "interrupted (Ctrl+C): stopped without a result"
    deadline = time.monotonic() + 60
    while _ray_workers(head_node.marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _ray_workers(head_node.marker)


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
