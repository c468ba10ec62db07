"""#3 head change and #4 bytes to the browser, driving the app with Streamlit's AppTest in this process.

A head change is a rerun where only the sidebar's ``layer`` or ``head`` slider changed. Model forwards are
counted with a global torch forward hook on any transformers model and our ``BertEncoder`` (so the count
does not depend on how extraction is written). Bytes are the serialized ForwardMsgs one rerun produces:
what the server hands its websocket for that rerun (an upper bound: Streamlit may send an unchanged large
message as a reference to the browser's cached copy).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import torch
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.local_script_runner import LocalScriptRunner
from transformers import PreTrainedModel

from attention_viz.models.encoder import BertEncoder
from attention_viz.models.loading import LoadedModel
from attention_viz.ui import internals
from benchmarks.harness import ROOT, Row, Settings, median, text_of_tokens

APP = str(ROOT / "app.py")
# Calling cached functions outside a script run (the suite shares one loaded model) logs a harmless warning.
internals.quiet_missing_context()
ALL_HEADS = "attention_viz/ui/pages/all_heads.py"


@dataclass
class Probe:
    """What happened during reruns: model forwards, and the bytes of each rerun's ForwardMsgs."""

    forwards: int = 0
    rerun_bytes: list[int] = field(default_factory=list)


@contextlib.contextmanager
def probing():
    probe = Probe()

    def count(module, _inputs):
        if isinstance(module, PreTrainedModel | BertEncoder):
            probe.forwards += 1

    real_run = LocalScriptRunner.run

    def run(self, *args, **kwargs):
        tree = real_run(self, *args, **kwargs)
        probe.rerun_bytes.append(sum(message.ByteSize() for message in self.forward_msgs()))
        return tree

    handle = torch.nn.modules.module.register_module_forward_pre_hook(count)
    LocalScriptRunner.run = run
    try:
        yield probe
    finally:
        LocalScriptRunner.run = real_run
        handle.remove()


def _errors(at: AppTest) -> str:
    return "; ".join(str(e.value)[:200] for e in at.exception)


def _step(at: AppTest, key: str, count: int) -> None:
    """Move the page's ``key`` box (Layer or Head, beside the map) one step (wrapping); fall back to session
    state on a page without one."""
    boxes = [box for box in at.selectbox if (box.key or "").split("~")[0] == f"_{key}"]  # see state.widget_key
    if boxes:
        boxes[0].set_value((int(boxes[0].value) + 1) % count)
    else:
        at.session_state[key] = (int(at.session_state[key]) + 1) % count


def _chart_bytes(at: AppTest) -> int:
    return sum(len(chart.proto.spec) for chart in at.get("plotly_chart"))


@dataclass
class Changes:
    """Head changes in one session: seconds and bytes of each measured rerun, forwards during them."""

    seconds: list[float]
    cpu_seconds: list[float]
    rerun_bytes: list[int]
    chart_bytes: int
    forwards: int
    first_run_s: float
    error: str = ""


def head_changes(text: str, page: str | None, warmup: int, repeats: int, shape=(6, 12)) -> Changes:
    """Open the app on ``text`` (and ``page``), then change only the layer or the head, alternately."""
    layers, heads = shape
    with probing() as probe:
        at = AppTest.from_file(APP, default_timeout=300)
        at.session_state["text"] = text
        start = time.perf_counter()
        at.run()
        if page is not None:
            at.switch_page(page).run()
        first = time.perf_counter() - start
        if at.exception:
            return Changes([], [], [], 0, 0, first, _errors(at))
        seconds, cpu, sizes = [], [], []
        forwards_before = probe.forwards
        for i in range(warmup + repeats):
            key, count = ("head", heads) if i % 2 == 0 else ("layer", layers)
            _step(at, key, count)
            start, start_cpu = time.perf_counter(), time.process_time()
            at.run()
            elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
            if at.exception:
                return Changes(seconds, cpu, sizes, 0, probe.forwards - forwards_before, first, _errors(at))
            if i >= warmup:
                seconds.append(elapsed)
                cpu.append(elapsed_cpu)
                sizes.append(probe.rerun_bytes[-1])
        return Changes(seconds, cpu, sizes, _chart_bytes(at), probe.forwards - forwards_before, first)


def _changes_row(id_: str, figure: str, size: str, changes: Changes, baseline_name: str, target: str) -> Row:
    """A row of AppTest reruns: their median seconds against the model forwards they ran (the target: none),
    with their samples; an app error goes in the note."""
    row = Row(
        id=id_,
        figure=figure,
        size=size,
        ours=median(changes.seconds) if changes.seconds else None,
        ours_unit="s",
        baseline=float(changes.forwards),
        baseline_unit="forwards",
        baseline_name=baseline_name,
        target=target,
        samples={"seconds": changes.seconds, "cpu_seconds": changes.cpu_seconds, "first_run_s": changes.first_run_s},
    )
    if changes.error:
        row.note = "app error: " + changes.error
    return row


def head_change_rows(loaded: LoadedModel, settings: Settings) -> tuple[list[Row], dict[int, Changes]]:
    """#3 on the opening sentence and at 512 tokens (the 512 session's bytes are reused by #4)."""
    shape = (loaded.info.num_layers, loaded.info.num_heads)
    from attention_viz.ui.view.state import EXAMPLE_TEXT

    rows, sessions = [], {}
    for label, text, limit in (
        ("sentence", EXAMPLE_TEXT, 0.100),
        ("512 tokens", text_of_tokens(loaded.tokenizer, 512), 0.150),
    ):
        changes = head_changes(text, None, settings.warmup, settings.repeats + (0 if settings.quick else 4), shape)
        n = len(loaded.tokenizer(text)["input_ids"])
        sessions[n] = changes
        row = _changes_row(
            "3",
            "head change (AppTest rerun)",
            f"{label} ({n} tokens)",
            changes,
            "model forwards during the head changes",
            f"0 forwards; ≤ {limit * 1000:.0f} ms",
        )
        if not changes.error:
            row.passed = changes.forwards == 0 and row.ours <= limit
            row.note = (
                f"{changes.forwards} forwards in {len(changes.seconds) + settings.warmup} head changes; "
                f"CPU time {median(changes.cpu_seconds) * 1000:.0f} ms (this process, all threads: steadier than "
                "wall time on a shared machine)"
            )
        rows.append(row)
    return rows, sessions


def _bertviz_html(loaded: LoadedModel, text: str) -> tuple[int, int, float] | str:
    """Bytes of bertviz's head_view and model_view HTML for ``text``, and seconds to build both."""
    try:
        from bertviz import head_view, model_view
    except ImportError:
        return "bertviz not importable (pip install --no-deps bertviz==1.4.1, see benchmarks/requirements.txt)"
    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        attention = loaded.model(**enc, output_attentions=True).attentions  # L × (1, h, t, t)
    tokens = loaded.tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    start = time.perf_counter()
    head = len(head_view(attention, tokens, html_action="return").data.encode())
    model = len(model_view(attention, tokens, html_action="return").data.encode())
    return head, model, time.perf_counter() - start


def bytes_rows(loaded: LoadedModel, settings: Settings, sessions: dict[int, Changes]) -> list[Row]:
    """#4: bytes per head change (Compare) and per grid rerun (All heads) vs bertviz's HTML."""
    shape = (loaded.info.num_layers, loaded.info.num_heads)
    rows = []
    grid_page = ALL_HEADS if (ROOT / ALL_HEADS).exists() else None
    for n in (32, 128, 512):
        text = text_of_tokens(loaded.tokenizer, n)
        compare = sessions.get(n) or head_changes(text, None, 1, 1, shape)
        grid = head_changes(text, grid_page, 1, 1, shape) if grid_page else None
        if settings.quick and n > 32:  # bertviz takes 9 s at 128 tokens and 27 s (869 MB) at 512
            bertviz = f"bertviz baseline skipped at {n} tokens in --quick"
        else:
            bertviz = _bertviz_html(loaded, text)
        if isinstance(bertviz, str):
            head_html, model_html, note = None, None, bertviz
        else:
            head_html, model_html, note = bertviz[0], bertviz[1], f"bertviz built both in {bertviz[2]:.1f} s"
        ours = median(compare.rerun_bytes) if compare.rerun_bytes else None
        row = Row(
            id="4",
            figure="bytes per head change (Compare)",
            size=f"{n} tokens",
            ours=ours,
            ours_unit="bytes",
            baseline=head_html,
            baseline_unit="bytes",
            baseline_name="bertviz 1.4.1 head_view HTML",
            ratio=None if ours is None or head_html is None else ours / head_html,
            target="≤ 1 MB" if n == 512 else "reported",
            passed=(ours <= 1_000_000) if n == 512 and ours is not None else None,
            note="; ".join(
                x
                for x in (
                    compare.error and "app error: " + compare.error,
                    note,
                    f"plotly specs {compare.chart_bytes:,} B",
                )
                if x
            ),
        )
        rows.append(row)
        if grid is None:
            rows.append(Row("4", "bytes, all-heads grid", f"{n} tokens", None, "bytes", note=f"no page {ALL_HEADS}"))
            continue
        ours = median(grid.rerun_bytes) if grid.rerun_bytes else None
        ratio = None if ours is None or model_html is None else ours / model_html
        rows.append(
            Row(
                id="4",
                figure="bytes, all-heads grid",
                size=f"{n} tokens",
                ours=ours,
                ours_unit="bytes",
                baseline=model_html,
                baseline_unit="bytes",
                baseline_name="bertviz 1.4.1 model_view HTML",
                ratio=ratio,
                target="≤ 0.05× at 128" if n == 128 else "reported",
                passed=(ratio <= 0.05) if n == 128 and ratio is not None else None,
                note="app error: " + grid.error if grid.error else "",
            )
        )
    return rows


INSIDE = "attention_viz/ui/pages/inside.py"


def inside_rows(loaded: LoadedModel, settings: Settings) -> list[Row]:
    """#9: Inside a head, head and layer changes on the opening sentence: model forwards and rerun seconds."""
    from attention_viz.ui.view.state import EXAMPLE_TEXT

    shape = (loaded.info.num_layers, loaded.info.num_heads)
    changes = head_changes(
        EXAMPLE_TEXT, INSIDE, settings.warmup, settings.repeats + (0 if settings.quick else 8), shape
    )
    n = len(loaded.tokenizer(EXAMPLE_TEXT)["input_ids"])
    row = _changes_row(
        "9",
        "Inside a head: head or layer change (AppTest rerun)",
        f"sentence ({n} tokens)",
        changes,
        "model forwards during the changes",
        "0 forwards",
    )
    if not changes.error:
        row.passed = changes.forwards == 0
        row.note = f"{changes.forwards} forwards in {len(changes.seconds) + settings.warmup} changes of head or layer"
    return [row]
