"""Exploring heads: per-head statistics, head importance, similarity, view options and attention flow.

- :mod:`~attention_viz.analysis.stats`: per-head statistics and tags (Clark et al. 2019).
- :mod:`~attention_viz.analysis.corpus`: the same over a corpus, batched, with progress and cancel.
- :mod:`~attention_viz.analysis.importance`: head importance by ablation (Michel et al. 2019).
- :mod:`~attention_viz.analysis.similarity`: JS divergence between heads and an MDS layout.
- :mod:`~attention_viz.analysis.views`: word level, hidden [CLS]/[SEP], pair blocks.
- :mod:`~attention_viz.analysis.flow`: rollout up to a layer (Abnar & Zuidema 2020) and norm-based
  attention (Kobayashi et al. 2020).
"""

from attention_viz.analysis.corpus import (
    CancelledError,
    CorpusResult,
    batch_attention,
    bundled_corpus,
    corpus_statistics,
    parse_corpus,
)
from attention_viz.analysis.flow import LayerFlow, layer_flow, norm_based_attention, transformed_values
from attention_viz.analysis.importance import head_importance, importance_sums
from attention_viz.analysis.similarity import head_divergence, head_divergence_sums, mds_layout
from attention_viz.analysis.stats import (
    STATISTICS,
    StatisticSums,
    TokenKinds,
    head_statistics,
    statistic_grid,
    statistic_sums,
    statistics_frame,
    tag_heads,
)
from attention_viz.analysis.views import BLOCKS, ViewMatrix, ViewOptions, apply_view, word_groups

__all__ = [
    "BLOCKS",
    "STATISTICS",
    "CancelledError",
    "CorpusResult",
    "LayerFlow",
    "StatisticSums",
    "TokenKinds",
    "ViewMatrix",
    "ViewOptions",
    "apply_view",
    "batch_attention",
    "bundled_corpus",
    "corpus_statistics",
    "head_divergence",
    "head_divergence_sums",
    "head_importance",
    "head_statistics",
    "importance_sums",
    "layer_flow",
    "mds_layout",
    "norm_based_attention",
    "parse_corpus",
    "statistic_grid",
    "statistic_sums",
    "statistics_frame",
    "tag_heads",
    "transformed_values",
    "word_groups",
]
