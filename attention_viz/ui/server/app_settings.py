"""The operator's settings as the app reads them: ``ATTENTION_VIZ_*`` environment variables, then
``[attention_viz]`` in ``.streamlit/secrets.toml`` (:mod:`attention_viz.settings`)."""

from __future__ import annotations

import logging

import streamlit as st

from attention_viz import settings

SECRETS_SECTION = "attention_viz"  # [attention_viz] in .streamlit/secrets.toml: allowed_models, model_root, ...


def _secrets() -> dict:
    try:
        return dict(st.secrets[SECRETS_SECTION]) if st.secrets.load_if_toml_exists() else {}
    except KeyError:
        return {}


def app_settings() -> settings.Settings:
    """The operator's settings: ``ATTENTION_VIZ_*`` environment variables, then ``[attention_viz]`` in
    ``.streamlit/secrets.toml``; the defaults (with the reason in the log) if a value is invalid.

    The server's start loads the bundled model through here (:mod:`attention_viz.ui.server.warmup`), so an
    invalid value is in the log from the start; :func:`settings_problem` lets a page say so too."""
    try:
        return settings.load(overrides=_secrets())
    except settings.SettingsError as exc:
        logging.getLogger("attention_viz").error("invalid setting, using the defaults: %s", exc)
        return settings.Settings()


def settings_problem() -> str | None:
    """Why the operator's settings are not used (the defaults are), or ``None`` when they are."""
    try:
        settings.load(overrides=_secrets())
    except settings.SettingsError as exc:
        return str(exc)
    return None
