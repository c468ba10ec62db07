"""Every job is bounded and says how long it takes: corpus limits, an empty corpus, the token limit's floor,
progress while head importance runs, a run that is stopped."""

from __future__ import annotations

import hashlib

import pytest
from apptools import no_errors, run_app
from replay import control

from attention_viz import analysis, settings
from attention_viz.analysis import CancelledError, corpus_statistics, parse_corpus
from attention_viz.cli import main
from attention_viz.extraction import InputError
from attention_viz.ui.frame import feedback

TEXTS = [("The cat sat.", None), ("A dog ran home.", "It was late."), ("Birds sing.", None)]
STATS = "attention_viz/ui/pages/head_stats.py"


@pytest.mark.parametrize("value", ["1", "2", "3", "4"])
def test_a_token_limit_without_room_for_a_pair_is_refused_at_start(value, capsys):
    with pytest.raises(settings.SettingsError, match=r"max_tokens must be at least 5 .*ATTENTION_VIZ_MAX_TOKENS"):
        settings.load(env={"ATTENTION_VIZ_MAX_TOKENS": value})
    assert settings.load(env={"ATTENTION_VIZ_MAX_TOKENS": "5"}).limits.tokens_for(512) == 5
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTENTION_VIZ_MAX_TOKENS", value)
        patch.setattr("attention_viz.models.loading.load_model", lambda *_: pytest.fail("loaded a model first"))
        assert main(["attention", "The cat sat."]) == 2
    assert "ATTENTION_VIZ_MAX_TOKENS" in capsys.readouterr().err


def test_corpus_limits_come_from_the_environment():
    limits = settings.load(env={"ATTENTION_VIZ_MAX_CORPUS_TEXTS": "10", "ATTENTION_VIZ_MAX_CORPUS_TOKENS": "99"}).limits
    assert (limits.max_corpus_texts, limits.max_corpus_tokens) == (10, 99)
    defaults = settings.Limits()
    assert (defaults.max_corpus_texts, defaults.max_corpus_tokens) == (1000, 50_000)
    bundled = parse_corpus(analysis.bundled_corpus())
    assert len(bundled) < defaults.max_corpus_texts  # the bundled corpus runs under the defaults


def test_a_corpus_over_the_limits_is_refused_before_it_runs(bundled):
    progress = []
    with pytest.raises(InputError, match=r"3 texts; the limit is 2 \(ATTENTION_VIZ_MAX_CORPUS_TEXTS\)") as refused:
        corpus_statistics(
            bundled, TEXTS, progress=lambda *a: progress.append(a), limits=settings.Limits(max_corpus_texts=2)
        )
    assert refused.value.code == "corpus_too_large" and progress == []
    message = feedback.input_message(refused.value)
    assert "3 texts" in message and "2" in message and "ATTENTION_VIZ_MAX_CORPUS_TEXTS" in message
    tokens = sum(len(bundled.tokenizer(a, b)["input_ids"]) for a, b in TEXTS)  # [CLS] ... [SEP] each
    with pytest.raises(InputError, match=f"{tokens} tokens; the limit is {tokens - 1} "):
        corpus_statistics(bundled, TEXTS, limits=settings.Limits(max_corpus_tokens=tokens - 1))
    assert corpus_statistics(bundled, TEXTS, limits=settings.Limits(max_corpus_tokens=tokens)).num_tokens == tokens


def test_the_command_line_names_the_corpus_limit(tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"Line {i}." for i in range(12)), encoding="utf-8")
    monkeypatch.setenv("ATTENTION_VIZ_MAX_CORPUS_TEXTS", "11")
    assert main(["stats", str(corpus)]) == 2
    assert capsys.readouterr().err == (
        "error: the corpus has 12 texts; the limit is 11 (ATTENTION_VIZ_MAX_CORPUS_TEXTS): use a smaller corpus\n"
    )


@pytest.mark.parametrize("content", ["", "\n\n  \n\t\n", "\u200b\n\ufeff\u200b\n\u00ad"])
def test_an_empty_corpus_says_so(content, bundled, tmp_path, capsys):
    with pytest.raises(InputError, match="the corpus is empty") as refused:
        corpus_statistics(bundled, parse_corpus(content))
    assert refused.value.code == "corpus_empty"
    assert feedback.input_message(refused.value).startswith("The corpus is empty")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(content, encoding="utf-8")
    assert main(["stats", str(corpus)]) == 2
    assert capsys.readouterr().err.startswith("error: the corpus is empty")


def test_head_importance_reports_progress_per_layer_and_stops_between_layers(tiny_model_dir):
    from attention_viz.models.loading import load_model

    loaded = load_model(tiny_model_dir)  # 2 layers
    calls = []
    corpus_statistics(loaded, TEXTS, batch_size=2, importance=True, progress=lambda d, n: calls.append((d, n)))
    assert calls == [(0, 3), (2 / 3, 3), (4 / 3, 3), (2, 3), (2 + 1 / 3, 3), (2 + 2 / 3, 3), (3, 3)]
    asked = []
    with pytest.raises(CancelledError, match="after 0 of 3"):
        corpus_statistics(
            loaded, TEXTS, batch_size=2, importance=True, cancel=lambda: bool(asked.append(1)) or len(asked) > 1
        )
    assert len(asked) == 2  # before the first batch, then after its first layer of importance


def test_time_left_and_its_words():
    from attention_viz.ui.shared.corpus_picker import duration

    assert analysis.seconds_left(10.0, 16, 264) == pytest.approx(155.0)
    assert analysis.seconds_left(3.0, 0, 264) is None
    assert (duration(42.4), duration(155.0), duration(3590)) == ("about 42 s", "about 2 min 40 s", "about 60 min")


def test_the_app_names_the_corpus_limit(monkeypatch):
    monkeypatch.setenv("ATTENTION_VIZ_MAX_CORPUS_TEXTS", "10")
    at = run_app()
    at.switch_page(STATS).run()
    control(at, "radio", "stats_scope").set_value("bundled").run()
    no_errors(at)
    (message,) = [m.value for m in at.info if "limit" in m.value]
    assert "texts; the limit on this server is 10" in message and "ATTENTION_VIZ_MAX_CORPUS_TEXTS" in message


def test_a_stopped_run_stays_stopped_until_run_again(bundled):
    corpus = analysis.bundled_corpus()
    run = f"{bundled.info.name}|{hashlib.sha256(corpus.encode()).hexdigest()}|False"
    at = run_app(_corpus_stopped=(run, 48.5, 264))
    at.switch_page(STATS).run()
    control(at, "radio", "stats_scope").set_value("bundled").run()
    no_errors(at)
    assert any("Stopped after 48 of 264 texts" in m.value for m in at.info) and not at.dataframe
    at.button(key="_corpus_again").click().run()
    no_errors(at)
    assert not any("Stopped" in m.value for m in at.info) and len(at.dataframe[0].value) == 72


def test_the_app_says_a_setting_is_invalid_and_uses_the_defaults(monkeypatch, bundled):
    monkeypatch.setenv("ATTENTION_VIZ_MAX_TOKENS", "2")
    at = run_app()
    no_errors(at)
    assert [e.value for e in at.error] == [
        "A server setting is invalid, so the defaults are used. Details are in the server log."
    ]
    assert "up to 512 tokens" in " ".join(c.value for c in at.sidebar.caption)  # the default: the model's own
