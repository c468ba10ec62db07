"""Limits and model-loading policy: one typed, frozen place, with environment overrides read in one function.

Defaults suit a laptop: any BERT name or folder loads, texts up to 5,000 characters, inputs up to the
model's maximum positions, corpora up to 1,000 texts and 50,000 tokens. Whoever runs a shared server
narrows them with environment variables (or, in the app, ``.streamlit/secrets.toml``, read by the UI
layer and passed in as ``overrides``). Only the app and the command line read them (:func:`load`); the library's
functions take a :class:`Limits` or a :class:`ModelPolicy` as an argument, these defaults when given none:

====================================  ==========================================================
``ATTENTION_VIZ_MAX_CHARS``           characters one sentence may have (default 5000)
``ATTENTION_VIZ_MAX_TOKENS``          tokens one input may have, at most the model's maximum
                                      (default: the model's ``max_position_embeddings``); at least
                                      5, ``[CLS] A [SEP] B [SEP]`` with one token of each sentence
``ATTENTION_VIZ_MAX_CORPUS_TEXTS``    texts (lines) a corpus run may have (default 1000)
``ATTENTION_VIZ_MAX_CORPUS_TOKENS``   tokens a corpus run may have in all (default 50000)
``ATTENTION_VIZ_ALLOWED_MODELS``      comma-separated hub names or folders that may load; when set
                                      (or a model root is), nothing else loads except the bundled model
``ATTENTION_VIZ_MODEL_ROOT``          a folder: local models load only from inside it
====================================  ==========================================================

With the bundled model on a laptop's CPU, the bundled corpus (264 texts, 3,223 tokens) takes seconds for its
statistics and about three minutes with head importance, so 1,000 texts take about ten minutes with head
importance (the page estimates the time after the first batch, and can stop the run).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

ENV_PREFIX = "ATTENTION_VIZ_"
DEFAULT_MAX_CHARS = 5000
DEFAULT_MAX_CORPUS_TEXTS = 1000
DEFAULT_MAX_CORPUS_TOKENS = 50_000
MIN_TOKENS = 5  # [CLS] A [SEP] B [SEP]: the special tokens of a pair and one token of each sentence


@dataclass(frozen=True)
class Limits:
    """How much input one request may have.

    Attributes:
        max_chars: characters per sentence; longer text is refused before tokenising.
        max_tokens: tokens per input after [CLS]/[SEP] are added; ``None`` means the model's own maximum.
            The smaller of this and the model's maximum applies; longer inputs are cut (longest first).
            At least :data:`MIN_TOKENS`.
        max_corpus_texts: texts one corpus run may have; a larger corpus is refused.
        max_corpus_tokens: tokens one corpus run may have in all (each text cut to ``max_tokens``).
    """

    max_chars: int = DEFAULT_MAX_CHARS
    max_tokens: int | None = None
    max_corpus_texts: int = DEFAULT_MAX_CORPUS_TEXTS
    max_corpus_tokens: int = DEFAULT_MAX_CORPUS_TOKENS

    def tokens_for(self, model_max: int) -> int:
        """The token limit for a model whose maximum is ``model_max``."""
        return model_max if self.max_tokens is None else min(self.max_tokens, model_max)


@dataclass(frozen=True)
class ModelPolicy:
    """Which models may load.

    Attributes:
        allowed: hub names or folders that may load; empty means any (unless ``root`` is set).
        root: if set, local folders load only from inside it (after resolving ``..`` and links); a name
            that is not in ``allowed`` is taken as a folder relative to it.
    """

    allowed: tuple[str, ...] = ()
    root: str | None = None

    @property
    def restricted(self) -> bool:
        """Whether only the listed names, the root's folders and the bundled model may load."""
        return bool(self.allowed) or self.root is not None


@dataclass(frozen=True)
class Settings:
    """Everything an operator can configure."""

    limits: Limits = field(default_factory=Limits)
    models: ModelPolicy = field(default_factory=ModelPolicy)


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the variable."""


def _positive_int(name: str, raw: object, least: int = 1, why: str = "") -> int:
    where = f"{ENV_PREFIX}{name.upper()}, or {name} in the app's secrets"
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise SettingsError(f"{name} must be a whole number, got {raw!r} ({where})") from None
    if value < least:
        raise SettingsError(f"{name} must be at least {least}{why}, got {value} ({where})")
    return value


def _names(raw: object) -> tuple[str, ...]:
    items = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    return tuple(name for name in (str(item).strip() for item in items) if name)


def load(env: Mapping[str, str] | None = None, overrides: Mapping[str, object] | None = None) -> Settings:
    """Read the settings: defaults, then ``ATTENTION_VIZ_*`` environment variables, then ``overrides``.

    Args:
        env: the environment (``os.environ`` if omitted).
        overrides: the same settings by lower-case name without the prefix (``max_chars``,
            ``max_tokens``, ``max_corpus_texts``, ``max_corpus_tokens``, ``allowed_models``,
            ``model_root``), e.g. from Streamlit's ``st.secrets``.

    Returns:
        :class:`Settings`.

    Raises:
        SettingsError: for a value that is not usable (a non-number, a number below 1, a token limit
            below :data:`MIN_TOKENS`); the message names the variable.
    """
    env = os.environ if env is None else env
    raw: dict[str, object] = {
        key[len(ENV_PREFIX) :].lower(): value for key, value in env.items() if key.startswith(ENV_PREFIX)
    }
    raw.update({key.lower(): value for key, value in (overrides or {}).items()})
    room = " (room for [CLS] A [SEP] B [SEP] with one token of each sentence)"

    def number(name: str, default: int | None, least: int = 1, why: str = "") -> int | None:
        return _positive_int(name, raw[name], least, why) if raw.get(name) else default

    limits = Limits(
        max_chars=number("max_chars", DEFAULT_MAX_CHARS),
        max_tokens=number("max_tokens", None, MIN_TOKENS, room),
        max_corpus_texts=number("max_corpus_texts", DEFAULT_MAX_CORPUS_TEXTS),
        max_corpus_tokens=number("max_corpus_tokens", DEFAULT_MAX_CORPUS_TOKENS),
    )
    root = str(raw.get("model_root") or "").strip() or None
    models = ModelPolicy(
        allowed=_names(raw.get("allowed_models") or ""),
        root=os.path.realpath(os.path.expanduser(root)) if root else None,
    )
    return Settings(limits=limits, models=models)
