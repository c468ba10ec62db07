"""attention-viz: what the heads of a pretrained BERT attend to, next to a from-scratch reproduction.

Public API (no Streamlit needed)::

    from attention_viz import attention_heatmap, extract, load_model, statistics_of_corpus
    loaded = load_model()                       # the bundled all-MiniLM-L6-v2
    result = extract(loaded, "The cat sat on the mat.")
    result.weights.shape                        # (layers, heads, query, key)
    attention_heatmap(result.weights[2, 5], result.encoding.labels).show()
    statistics_of_corpus(loaded, "The cat sat.\nIt slept.").statistics  # one row per (layer, head)

The runs the app and the command line make (statistics over a corpus, the head atlas, head scores, a model's
description) are these same calls (:mod:`attention_viz.runs`).

The names are imported on first use (PEP 562), so ``import attention_viz.ui.server.warmup`` does not pull in
torch and transformers: the app draws its first element while they load.
"""

import importlib

_SOURCES = {
    "ArticleSelfAttention": "models.article",
    "MultiHeadSelfAttention": "models.attention",
    "key_padding_mask": "models.attention",
    "scaled_dot_product_attention": "models.attention",
    "BertEncoder": "models.encoder",
    "EncoderConfig": "models.encoder",
    "Variant": "models.encoder",
    "WeightMismatchError": "models.encoder",
    "AttentionError": "extraction",
    "AttentionResult": "extraction",
    "Encoding": "extraction",
    "InputError": "extraction",
    "encode": "extraction",
    "extract": "extraction",
    "attention_heatmap": "figures",
    "difference_heatmap": "figures",
    "head_grid": "figures",
    "BUNDLED_MODEL": "models.loading",
    "LoadedModel": "models.loading",
    "ModelInfo": "models.loading",
    "ModelLoadError": "models.loading",
    "load_model": "models.loading",
    "load_seq2seq": "models.loading",
    "extract_seq2seq": "extraction.seq2seq",
    "generate_seq2seq": "extraction.seq2seq",
    "generate_decoder": "extraction.generation",
    "attention_rollout": "analysis.rollout",
    "drop_tokens": "analysis.views",
    "js_divergence": "analysis.measures",
    "max_abs_difference": "analysis.measures",
    "merge_word_pieces": "analysis.views",
    "row_entropy": "analysis.measures",
    "model_head_scores": "analysis.head_scores",
    "scores_frame": "analysis.head_scores",
    "previous_token_scores": "analysis.head_scores",
    "duplicate_token_scores": "analysis.head_scores",
    "induction_scores": "analysis.head_scores",
    "sink_scores": "analysis.head_scores",
    "RayCluster": "runs",
    "atlas_of_corpus": "runs",
    "describe_model": "runs",
    "statistics_of_corpus": "runs",
}
__all__ = [  # the public names; each is imported from its module on first use
    "BUNDLED_MODEL",
    "ArticleSelfAttention",
    "AttentionError",
    "AttentionResult",
    "BertEncoder",
    "EncoderConfig",
    "Encoding",
    "InputError",
    "LoadedModel",
    "ModelInfo",
    "ModelLoadError",
    "MultiHeadSelfAttention",
    "RayCluster",
    "Variant",
    "WeightMismatchError",
    "atlas_of_corpus",
    "attention_heatmap",
    "attention_rollout",
    "describe_model",
    "difference_heatmap",
    "drop_tokens",
    "duplicate_token_scores",
    "encode",
    "extract",
    "extract_seq2seq",
    "generate_decoder",
    "generate_seq2seq",
    "head_grid",
    "induction_scores",
    "js_divergence",
    "key_padding_mask",
    "load_model",
    "load_seq2seq",
    "max_abs_difference",
    "merge_word_pieces",
    "model_head_scores",
    "previous_token_scores",
    "row_entropy",
    "scaled_dot_product_attention",
    "scores_frame",
    "sink_scores",
    "statistics_of_corpus",
]


def __getattr__(name: str):
    if name not in _SOURCES:  # a submodule, e.g. attention_viz.figures after a plain `import attention_viz`
        try:
            return importlib.import_module(f"attention_viz.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"attention_viz.{name}":
                raise
            raise AttributeError(f"module 'attention_viz' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"attention_viz.{_SOURCES[name]}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
