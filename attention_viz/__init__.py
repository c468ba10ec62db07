"""attention-viz: what the heads of a pretrained BERT attend to, next to a from-scratch reproduction.

Public API (no Streamlit needed)::

    from attention_viz import load_model, extract, attention_heatmap
    loaded = load_model()                       # the bundled all-MiniLM-L6-v2
    result = extract(loaded, "The cat sat on the mat.")
    result.weights.shape                        # (layers, heads, query, key)
    attention_heatmap(result.weights[2, 5], result.encoding.labels).show()
"""

from attention_viz.article import ArticleSelfAttention
from attention_viz.attention import MultiHeadSelfAttention, key_padding_mask, scaled_dot_product_attention
from attention_viz.encoder import BertEncoder, EncoderConfig, Variant, WeightMismatchError
from attention_viz.extraction import AttentionError, AttentionResult, Encoding, InputError, encode, extract
from attention_viz.figures import attention_heatmap, difference_heatmap, head_grid
from attention_viz.loading import BUNDLED_MODEL, LoadedModel, ModelInfo, ModelLoadError, load_model
from attention_viz.metrics import (
    attention_rollout,
    drop_tokens,
    js_divergence,
    max_abs_difference,
    merge_word_pieces,
    row_entropy,
)

__all__ = [
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
    "Variant",
    "WeightMismatchError",
    "attention_heatmap",
    "attention_rollout",
    "difference_heatmap",
    "drop_tokens",
    "encode",
    "extract",
    "head_grid",
    "js_divergence",
    "key_padding_mask",
    "load_model",
    "max_abs_difference",
    "merge_word_pieces",
    "row_entropy",
    "scaled_dot_product_attention",
]
