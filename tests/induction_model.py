"""A two-layer GPT-2 whose weights are set by hand: a previous-token head, then an induction head.

The residual stream has three blocks of one-hot dimensions: the current token (``V`` dims, from the
token embedding), the position (``P`` dims, from the position embedding) and the previous token (``V``
dims, written by layer 0). Every MLP, every bias and the second head of each layer are 0, and each
LayerNorm has weight 1 and bias 0: its input always has the same number of ones, so it only scales.

- Layer 0, head 0 (previous-token head): the query of position ``p`` is position ``p - 1``'s code and a
  key is its own position's code, so each token attends to the one before it; the value is the key's
  token, which the output projection writes into the previous-token block.
- Layer 1, head 0 (induction head): the query is the current token's code and a key is the token before
  the key (the previous-token block), so a token attends to the position after an earlier copy of
  itself: prefix matching. Where nothing matches (a control without repeats) its scores are all about
  equal and the attention spreads over every key.
"""

from __future__ import annotations

import math

import torch
from tiny_families import _tokenizer
from transformers import GPT2Config, GPT2Model

PREVIOUS_HEAD, INDUCTION_HEAD = (0, 0), (1, 0)
POSITIONS = 128
SHARPNESS = 1.5  # score of a match, in units that give about 30 after the scaling: the softmax is sharp


def make_induction_gpt2(folder) -> str:
    """Save the hand-set GPT-2 (safetensors) with the tiny byte-level BPE tokenizer in ``folder``."""
    tokenizer = _tokenizer("gpt2")
    vocab, positions = len(tokenizer), POSITIONS
    token_dims, position_dims, previous_dims = 0, vocab, vocab + positions
    hidden = 2 * vocab + positions
    hidden += hidden % 2  # two heads of equal size
    heads, head_dim = 2, hidden // 2
    end = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = GPT2Config(
        vocab_size=vocab, n_positions=positions, n_embd=hidden, n_layer=2, n_head=heads, n_inner=4,
        bos_token_id=end, eos_token_id=end, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    model = GPT2Model(config)
    with torch.no_grad():
        for param in model.parameters():
            param.zero_()
        for name, param in model.named_parameters():
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                param.fill_(1.0)
        model.wte.weight[torch.arange(vocab), token_dims + torch.arange(vocab)] = 1.0
        model.wpe.weight[torch.arange(positions), position_dims + torch.arange(positions)] = 1.0
        # LayerNorm turns k ones among `hidden` dims into about sqrt(hidden / k) each.
        scale0, scale1 = math.sqrt(hidden / 2), math.sqrt(hidden / 3)
        attn0, attn1 = model.h[0].attn, model.h[1].attn
        query, key, value = (slice(part * hidden, part * hidden + head_dim) for part in range(3))  # head 0
        # Conv1D weights are (in, out): column c of c_attn is output c.
        w0 = attn0.c_attn.weight  # (hidden, 3 * hidden)
        p = torch.arange(1, positions)
        w0[position_dims + p, query.start + p - 1] = SHARPNESS  # query of position p: code of p - 1
        w0[position_dims + torch.arange(positions), key.start + torch.arange(positions)] = SHARPNESS
        w0[token_dims + torch.arange(vocab), value.start + torch.arange(vocab)] = 1.0  # value: the key's token
        attn0.c_proj.weight[torch.arange(vocab), previous_dims + torch.arange(vocab)] = 1.0 / scale0
        w1 = attn1.c_attn.weight
        w1[token_dims + torch.arange(vocab), query.start + torch.arange(vocab)] = SHARPNESS  # current token
        w1[previous_dims + torch.arange(vocab), key.start + torch.arange(vocab)] = SHARPNESS  # key's previous
        w1[token_dims + torch.arange(vocab), value.start + torch.arange(vocab)] = 1.0
        attn1.c_proj.weight[torch.arange(vocab), token_dims + torch.arange(vocab)] = 1.0 / scale1
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)
