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
