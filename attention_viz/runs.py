"""The runs the app, the command line and the Python API share: each is this one call in all three.

- :func:`statistics_of_corpus`: per-head statistics over a corpus text (the app's Head statistics, ``stats FILE``),
  in this process or on a Ray cluster.
- :func:`atlas_of_corpus`: the head atlas of a corpus text (the app's Head atlas, ``atlas FILE``), the same two ways.
- :func:`~attention_viz.analysis.head_scores.model_head_scores`: named head scores on seeded random tokens (the
  app's scores, ``stats --scores``), already one call.
- :func:`describe_model`: what a model takes (the app's sidebar, ``model``), with :func:`forward_estimate`.

Each long run takes ``progress(done, total)`` and ``cancel()`` (True stops it with
:class:`~attention_viz.analysis.corpus.CancelledError`), so that the app can share it between sessions
(:mod:`attention_viz.analysis.shared_runs`) and the command line can draw a progress bar. No Streamlit here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from attention_viz import settings
from attention_viz.analysis import corpus as corpus_module
from attention_viz.analysis.corpus import CorpusResult, Progress
from attention_viz.models import sizes
from attention_viz.models.loading import LoadedModel


@dataclass(frozen=True)
class RayCluster:
    """Where a run goes when it runs on Ray actors (:mod:`attention_viz.analysis.distributed`; the ``ray`` extra).

    Attributes:
        model: the hub name or folder every worker loads, as the local model was loaded (None: the bundled model).
        address: the cluster (``ray://host:10001``, ``auto``); None as ``ray.init()`` finds one.
        workers: actors to start (None: the cluster's CPUs).
        connect_timeout_s: seconds the cluster has to answer (None: the module's default).
        policy: which models the workers may load (None: any).
    """

    model: str | None = None
    address: str | None = None
    workers: int | None = None
    connect_timeout_s: float | None = None
    policy: settings.ModelPolicy | None = None

    def options(self) -> dict:
        """The keyword arguments of the :mod:`~attention_viz.analysis.distributed` runs."""
        chosen = {"workers": self.workers, "policy": self.policy}
        if self.connect_timeout_s is not None:
            chosen["connect_timeout_s"] = self.connect_timeout_s
        return chosen


def statistics_of_corpus(
    loaded: LoadedModel,
    corpus: str,
    batch_size: int = 16,
    importance: bool = False,
    divergence: bool = False,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    limits: settings.Limits | None = None,
    ray: RayCluster | None = None,
) -> CorpusResult:
    """Per-head statistics over a corpus text, one text per line (:func:`~attention_viz.analysis.corpus.parse_corpus`:
    a tab splits a sentence pair; blank lines are counted in ``num_skipped``).

    Args:
        loaded: the model (with ``ray``, the one its workers load too).
        corpus: the corpus as text.
        batch_size, importance, divergence, progress, cancel, limits: as
            :func:`~attention_viz.analysis.corpus.corpus_statistics`.
        ray: run the batches on a Ray cluster (:func:`~attention_viz.analysis.distributed.corpus_statistics_on_ray`,
            the same numbers to about 1e-15); None: in this process.

    Returns:
        :class:`~attention_viz.analysis.corpus.CorpusResult`, ``num_skipped`` with the blank lines.

    Raises:
        InputError: an empty corpus, or one over ``limits``.
        AttentionError: the model returns no or invalid attention.
        CancelledError: when ``cancel()`` returned True.
        DistributedError, NotEnoughCPUsError: with ``ray``, as the Ray run raises them.
    """
    texts = corpus_module.parse_corpus(corpus)
    if ray is None:
        result = corpus_module.corpus_statistics(
            loaded, texts, batch_size, progress, cancel, importance=importance, divergence=divergence, limits=limits
        )
    else:
        from attention_viz.analysis.distributed import corpus_statistics_on_ray

        result = corpus_statistics_on_ray(
            texts,
            ray.model,
            ray.address,
            batch_size,
            progress=progress,
            cancel=cancel,
            importance=importance,
            divergence=divergence,
            limits=limits,
            **ray.options(),
        )
    return replace(result, num_skipped=result.num_skipped + corpus_module.blank_lines(corpus))


def atlas_of_corpus(
    loaded: LoadedModel,
    corpus: str,
    batch_size: int = 16,
    top: int = 20,
    sample: int = 20,
    seed: int = 0,
    fold: bool = True,
    exclude: bool = True,
    induction: bool = False,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    limits: settings.Limits | None = None,
    ray: RayCluster | None = None,
):
    """The head atlas of a corpus text (:func:`~attention_viz.analysis.atlas.build_atlas`: every head's strongest
    and typical attention events).

    Args:
        loaded, corpus, ray: as :func:`statistics_of_corpus`.
        batch_size, top, sample, seed, fold, exclude, induction, progress, cancel, limits: as ``build_atlas``.

    Returns:
        :class:`~attention_viz.analysis.atlas.Atlas`.

    Raises:
        InputError, AttentionError, CancelledError: as ``build_atlas``.
        DistributedError, NotEnoughCPUsError: with ``ray``, as the Ray run raises them.
    """
    texts = corpus_module.parse_corpus(corpus)
    chosen = dict(top=top, sample=sample, seed=seed, fold=fold, exclude=exclude, batch_size=batch_size)
    chosen |= dict(induction=induction, progress=progress, cancel=cancel, limits=limits)
    if ray is None:
        from attention_viz.analysis.atlas import build_atlas

        return build_atlas(loaded, texts, **chosen)
    from attention_viz.analysis.distributed import atlas_on_ray

    return atlas_on_ray(texts, ray.model, ray.address, **chosen, **ray.options())


def forward_estimate(
    loaded: LoadedModel, tokens: int = sizes.FORWARD_TOKENS, limits: settings.Limits | None = None
) -> sizes.ForwardEstimate:
    """How long a forward of ``tokens`` tokens takes (fewer if the model or ``limits`` take fewer), estimated from
    one short timed forward (:func:`~attention_viz.models.sizes.estimate_forward`).

    Raises:
        ValueError: ``tokens`` below 1.
    """
    if tokens < 1:
        raise ValueError(f"tokens must be at least 1, got {tokens}")
    limits = settings.Limits() if limits is None else limits
    return sizes.estimate_forward(loaded.encoder, min(tokens, limits.tokens_for(loaded.info.max_positions)))


def describe_model(
    loaded: LoadedModel, tokens: int = sizes.FORWARD_TOKENS, limits: settings.Limits | None = None
) -> dict:
    """What a model takes, as plain values (the command line's ``model`` prints it as JSON): its name and family,
    parameters and their bytes in float32 (``float32_size`` as text), the memory available now (bytes, None where
    unknown), layers, query heads, key/value heads and query heads per key/value head (grouped-query attention),
    and :func:`forward_estimate` at ``tokens`` (seconds; the measured probe's tokens and seconds beside).

    Raises:
        ValueError: ``tokens`` below 1.
    """
    info = loaded.info
    estimate = forward_estimate(loaded, tokens, limits)
    return {
        "model": info.name,
        "family": info.family_name,
        "parameters": info.parameters,
        "float32_bytes": info.weight_bytes,
        "float32_size": sizes.size_text(info.weight_bytes),
        "available_bytes": sizes.available_memory(),
        "num_layers": info.num_layers,
        "num_heads": info.num_heads,
        "num_key_value_heads": info.num_key_value_heads or info.num_heads,
        "heads_per_group": info.heads_per_group,
        "forward_tokens": estimate.tokens,
        "forward_seconds_estimate": round(estimate.seconds, 4),
        "measured_tokens": estimate.measured_tokens,
        "measured_seconds": round(estimate.measured_seconds, 6),
    }
