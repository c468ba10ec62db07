"""Settings: defaults, environment overrides, overrides from st.secrets, bad values."""

import pytest

from attention_viz.settings import DEFAULT_MAX_CHARS, Limits, SettingsError, load


def test_defaults_without_environment():
    loaded = load(env={})
    assert loaded.limits == Limits(max_chars=DEFAULT_MAX_CHARS, max_tokens=None)
    assert loaded.limits.tokens_for(512) == 512
    assert loaded.models.allowed == () and loaded.models.root is None


def test_environment_then_overrides():
    env = {"ATTENTION_VIZ_MAX_CHARS": "100", "ATTENTION_VIZ_MAX_TOKENS": "64", "OTHER": "x"}
    loaded = load(env=env)
    assert (loaded.limits.max_chars, loaded.limits.tokens_for(512), loaded.limits.tokens_for(32)) == (100, 64, 32)
    again = load(env=env, overrides={"max_chars": 7, "allowed_models": ["a", " b "]})
    assert again.limits.max_chars == 7 and again.models.allowed == ("a", "b") and again.models.restricted


@pytest.mark.parametrize("value", ["ten", "0", "-3"])
def test_bad_values_name_the_setting(value):
    with pytest.raises(SettingsError, match="max_chars"):
        load(env={"ATTENTION_VIZ_MAX_CHARS": value})


def test_settings_are_frozen():
    with pytest.raises(AttributeError):
        load(env={}).limits.max_chars = 1


def test_the_core_takes_its_settings_as_arguments_and_ignores_the_environment(monkeypatch, bundled, tiny_model_dir):
    """Only the app and the command line read ``ATTENTION_VIZ_*`` (their tests check they obey it); a library
    function given no limits or policy uses the defaults, and one given them obeys them."""
    from attention_viz import settings
    from attention_viz.analysis.minimal_pairs import minimal_pair
    from attention_viz.extraction import InputError, encode
    from attention_viz.models.loading import ModelLoadError, load_model

    monkeypatch.setenv("ATTENTION_VIZ_MAX_CHARS", "5")
    monkeypatch.setenv("ATTENTION_VIZ_ALLOWED_MODELS", "some/listed-model")
    operator = settings.load()
    assert encode(bundled.tokenizer, "The cat sat.").num_tokens == 6  # [CLS] the cat sat . [SEP], under 5,000
    assert load_model(tiny_model_dir).info.num_heads == 4
    with pytest.raises(InputError, match="the text has 12 characters; the limit is 5"):
        encode(bundled.tokenizer, "The cat sat.", limits=operator.limits)
    with pytest.raises(InputError, match="the limit is 5"):
        minimal_pair(bundled, "The cat sat.", "The dog sat.", operator.limits)
    with pytest.raises(ModelLoadError, match="not on this server's list"):
        load_model(tiny_model_dir, operator.models)
