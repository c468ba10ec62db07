"""The models: our from-scratch attention and encoder, the seed article's layer, and loading a checkpoint.

- :mod:`~attention_viz.models.attention`: scaled dot-product attention and multi-head self-attention.
- :mod:`~attention_viz.models.article`: the seed article's simplified ``SelfAttention``, as written there.
- :mod:`~attention_viz.models.encoder`: a from-scratch encoder (BERT and, by options, the other
  families) that takes a checkpoint's weights.
- :mod:`~attention_viz.models.families`: one module per supported family (BERT, RoBERTa, XLM-RoBERTa,
  DistilBERT, ELECTRA, ALBERT, GPT-2), picked by ``config.model_type``.
- :mod:`~attention_viz.models.seq2seq`: a from-scratch encoder–decoder (T5, BART) with encoder, decoder and
  cross-attention; :mod:`~attention_viz.models.seq2seq_families` maps their checkpoints onto it.
- :mod:`~attention_viz.models.loading`: a checkpoint (bundled, cached or a folder) loaded for attention
  (:func:`load_seq2seq` for T5 and BART).
- :mod:`~attention_viz.models.sizes`: a checkpoint's memory in float32 before it loads, the memory available,
  and an estimate of a forward's time.
- :mod:`~attention_viz.models.catalog`: the supported models already on this machine.
"""

from attention_viz.models.article import ArticleSelfAttention
from attention_viz.models.attention import MultiHeadSelfAttention, key_padding_mask, scaled_dot_product_attention
from attention_viz.models.encoder import BertEncoder, EncoderConfig, Variant, WeightMismatchError
from attention_viz.models.loading import BUNDLED_MODEL, LoadedModel, ModelInfo, ModelLoadError, load_model

__all__ = [
    "BUNDLED_MODEL",
    "ArticleSelfAttention",
    "BertEncoder",
    "EncoderConfig",
    "LoadedModel",
    "ModelInfo",
    "ModelLoadError",
    "MultiHeadSelfAttention",
    "Variant",
    "WeightMismatchError",
    "key_padding_mask",
    "load_model",
    "scaled_dot_product_attention",
]
