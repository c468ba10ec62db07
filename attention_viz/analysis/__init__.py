"""Analysis of attention: measures, views, rollout and norms, per-head statistics, importance, similarity, steps.

- :mod:`~attention_viz.analysis.measures`: attention entropy, Jensen-Shannon divergence, largest difference.

- :mod:`~attention_viz.analysis.stats`: per-head statistics and tags (Clark et al. 2019).
- :mod:`~attention_viz.analysis.head_scores`: previous-token, duplicate-token, induction and sink scores
  (Olsson et al. 2022; TransformerLens; Xiao et al. 2023) on seeded random sequences.
- :mod:`~attention_viz.analysis.corpus`: the same over a corpus, batched, with progress and cancel.
- :mod:`~attention_viz.analysis.importance`: head importance by ablation (Michel et al. 2019).
- :mod:`~attention_viz.analysis.similarity`: JS divergence between heads and an MDS layout.
- :mod:`~attention_viz.analysis.views`: word level (merged WordPiece pieces), hidden [CLS]/[SEP], pair blocks.
- :mod:`~attention_viz.analysis.rollout`: attention rollout up to a layer (Abnar & Zuidema 2020) and
  norm-based attention (Kobayashi et al. 2020).
- :mod:`~attention_viz.analysis.steps`: one head's computation step by step, with the model's weights.
- :mod:`~attention_viz.analysis.seq2seq_steps`: the same for an encoder–decoder's (T5, BART) encoder, decoder and
  cross-attention heads.
- :mod:`~attention_viz.analysis.article_compare`: the seed article's layer beside a correct layer of BERT's design
  (both with random weights from a seed), one difference at a time.
- :mod:`~attention_viz.analysis.presets`: the bundled examples and what each shows, read from the model.
"""

from attention_viz.analysis.corpus import (
    CancelledError,
    CorpusResult,
    batch_attention,
    bundled_corpus,
    corpus_statistics,
    parse_corpus,
    seconds_left,
)
from attention_viz.analysis.head_scores import HeadScores, model_head_scores, scores_frame
from attention_viz.analysis.importance import head_importance, importance_sums, text_statistics
from attention_viz.analysis.measures import head_agreement, js_divergence, max_abs_difference, row_entropy
from attention_viz.analysis.rollout import (
    RolloutAndNorms,
    attention_rollout,
    norm_based_attention,
    rollout_and_norms,
    transformed_values,
)
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
from attention_viz.analysis.views import (
    BLOCKS,
    ViewMatrix,
    ViewOptions,
    apply_view,
    drop_tokens,
    merge_word_pieces,
    word_groups,
)

__all__ = [
    "BLOCKS",
    "STATISTICS",
    "CancelledError",
    "CorpusResult",
    "HeadScores",
    "RolloutAndNorms",
    "StatisticSums",
    "TokenKinds",
    "ViewMatrix",
    "ViewOptions",
    "apply_view",
    "attention_rollout",
    "batch_attention",
    "bundled_corpus",
    "corpus_statistics",
    "drop_tokens",
    "head_agreement",
    "head_divergence",
    "head_divergence_sums",
    "head_importance",
    "head_statistics",
    "importance_sums",
    "js_divergence",
    "max_abs_difference",
    "mds_layout",
    "merge_word_pieces",
    "model_head_scores",
    "norm_based_attention",
    "parse_corpus",
    "rollout_and_norms",
    "row_entropy",
    "scores_frame",
    "seconds_left",
    "statistic_grid",
    "statistic_sums",
    "statistics_frame",
    "tag_heads",
    "text_statistics",
    "transformed_values",
    "word_groups",
]
