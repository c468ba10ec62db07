"""The correct multi-head self-attention layer: scaling by √head_dim, every head sees the whole vector, head
split and merge against torch, key-side padding masks, float16 masks, dropout only in training."""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attention_viz.models.attention import MultiHeadSelfAttention, key_padding_mask, scaled_dot_product_attention


def _scores_query(raw_scores, head_dim):
    """q (1, 1, 1, d) and k (1, 1, s, d) whose raw dot products are ``raw_scores``."""
    s = len(raw_scores)
    query = torch.zeros(1, 1, 1, head_dim)
    query[..., 0] = 1.0
    key = torch.zeros(1, 1, s, head_dim)
    key[0, 0, :, 0] = torch.tensor(raw_scores)
    return query, key, torch.randn(1, 1, s, head_dim)


@pytest.mark.parametrize(
    "raw, correct, article",
    [
        ([8, 0, 0, 0], [0.4754, 0.1749, 0.1749, 0.1749], [0.3219, 0.2260, 0.2260, 0.2260]),
        ([16, 8, 0, 0], [0.6103, 0.2245, 0.0826, 0.0826], [0.3720, 0.2612, 0.1834, 0.1834]),
    ],
)
def test_scores_are_scaled_by_sqrt_head_dim_not_sqrt_embed_size(raw, correct, article):
    """head_dim 64 (embed 512, 8 heads), one query's raw scores: divided by √64 they give the correct weights;
    divided by √512, as the seed article does, flatter ones (values computed in float64)."""
    query, key, value = _scores_query(raw, head_dim=64)
    _, weights = scaled_dot_product_attention(query, key, value)
    assert_close(weights[0, 0, 0], torch.tensor(correct), atol=1e-4, rtol=0)
    _, flat = scaled_dot_product_attention(query, key, value, scaling=512**-0.5)
    assert_close(flat[0, 0, 0], torch.tensor(article), atol=1e-4, rtol=0)


def test_a_correct_layer_has_3_embed_squared_projection_weights():
    """Query, key and value each project the whole embedding: 3·E·E weights (786,432 at E = 512), not
    the article's 3·d·d shared by all heads."""
    layer = MultiHeadSelfAttention(512, 8, bias=False)
    qkv = sum(p.numel() for m in (layer.query, layer.key, layer.value) for p in m.parameters())
    assert qkv == 3 * 512 * 512 == 786_432


def test_each_head_sees_the_whole_vector():
    """Head 0's slice of every token is zero; a layer that projects the whole vector, then splits it into
    heads, still gives head 0 non-uniform attention (the article's per-slice layout would give exactly 1/3)."""
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(4, 2, bias=False).eval()
    tokens = torch.tensor([[[0.0, 0, 1, 2], [0, 0, 3, 4], [0, 0, 5, 6]]])
    _, weights = layer(tokens)
    assert (weights[0, 0] - 1 / 3).abs().max() > 1e-3


@pytest.mark.parametrize("heads", [1, 2, 8])
def test_head_split_matches_torch_multihead_attention_when_input_size_differs(heads):
    """Reshaping bugs hide with one head or equal in and out sizes: with 1, 2 and 8 heads and an input of 24
    against an inner size of 4·heads, per-head weights equal nn.MultiheadAttention's with the same projections."""
    torch.manual_seed(heads)
    input_size, head_dim = 24, 4
    inner = heads * head_dim
    ours = MultiHeadSelfAttention(input_size, heads, head_dim=head_dim).eval()
    reference = nn.MultiheadAttention(inner, heads, kdim=input_size, vdim=input_size, batch_first=True).eval()
    with torch.no_grad():  # the reference's query input is ours already projected, so its q projection is I
        reference.q_proj_weight.copy_(torch.eye(inner))
        reference.k_proj_weight.copy_(ours.key.weight)
        reference.v_proj_weight.copy_(ours.value.weight)
        reference.in_proj_bias.copy_(torch.cat([torch.zeros(inner), ours.key.bias, ours.value.bias]))
    x = torch.randn(3, 7, input_size)
    with torch.no_grad():
        _, weights = ours(x)
        _, expected = reference(ours.query(x), x, x, need_weights=True, average_attn_weights=False)
    assert weights.shape == (3, heads, 7, 7)
    assert_close(weights, expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("heads", [1, 2, 8])
def test_head_merge_output_matches_torch_multihead_attention(heads):
    """With 1, 2 and 8 heads and padded keys, weights and the merged output equal nn.MultiheadAttention's."""
    torch.manual_seed(10 + heads)
    size = 32
    ours = MultiHeadSelfAttention(size, heads).eval()
    reference = nn.MultiheadAttention(size, heads, batch_first=True).eval()
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([ours.query.weight, ours.key.weight, ours.value.weight]))
        reference.in_proj_bias.copy_(torch.cat([ours.query.bias, ours.key.bias, ours.value.bias]))
        reference.out_proj.weight.copy_(ours.output.weight)
        reference.out_proj.bias.copy_(ours.output.bias)
    x = torch.randn(2, 6, size)
    padding = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    with torch.no_grad():
        output, weights = ours(x, padding)
        expected_output, expected = reference(
            x, x, x, key_padding_mask=padding == 0, need_weights=True, average_attn_weights=False
        )
    assert_close(weights, expected, atol=1e-6, rtol=0)
    assert_close(output, expected_output, atol=1e-5, rtol=0)


def test_only_a_key_side_padding_mask_is_right():
    """Batch 2, 8 heads, length 5, sample 0 with 2 padding tokens, raw scores 0: a key mask (b, 1, 1, s)
    gives rows [1/3, 1/3, 1/3, 0, 0]; a query-side mask (b, 1, t, 1) gives 0.2 everywhere; a bare (b, s)
    mask raises instead of broadcasting by accident."""
    q = torch.zeros(2, 8, 5, 4)  # all raw scores 0
    k, v = torch.randn(2, 8, 5, 4), torch.randn(2, 8, 5, 4)
    padding = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    key_mask = key_padding_mask(padding, torch.float32)
    assert key_mask.shape == (2, 1, 1, 5)
    _, weights = scaled_dot_product_attention(q, k, v, key_mask)
    assert_close(weights[0], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0, 0]).expand(8, 5, 5))
    assert_close(weights[1], torch.full((8, 5, 5), 0.2))
    _, wrong = scaled_dot_product_attention(q, k, v, key_mask.transpose(-1, -2))  # query-side (b, 1, t, 1)
    assert_close(wrong[0], torch.full((8, 5, 5), 0.2))
    with pytest.raises(ValueError, match="4-D"):
        scaled_dot_product_attention(q, k, v, padding.float())
    with pytest.raises(ValueError, match="batch, key"):
        key_padding_mask(key_mask, torch.float32)


def test_layer_gives_padded_keys_no_attention():
    torch.manual_seed(1)
    layer = MultiHeadSelfAttention(16, 8).eval()
    _, weights = layer(torch.randn(2, 5, 16), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]))
    assert torch.equal(weights[0, :, :, 3:], torch.zeros(8, 5, 2))
    assert_close(weights.sum(-1), torch.ones(2, 8, 5))


def test_float16_masking_with_the_dtype_minimum_is_exact():
    """Masked scores get torch.finfo(dtype).min (a literal -1e20 overflows float16): masked weights are
    exactly 0 and rows still sum to 1."""
    torch.manual_seed(2)
    layer = MultiHeadSelfAttention(16, 4).half().eval()
    padding = torch.tensor([[1, 1, 1, 0, 0]])
    _, weights = layer(torch.randn(1, 5, 16).half(), padding)
    assert weights.dtype == torch.float16
    assert torch.equal(weights[..., 3:], torch.zeros(1, 4, 5, 2, dtype=torch.float16))
    assert_close(weights.float().sum(-1), torch.ones(1, 4, 5), atol=2e-3, rtol=0)


def test_dropout_only_in_train_mode():
    """In train mode the weights include dropout (rows no longer sum to 1, runs differ); in eval mode two
    runs are identical and every row sums to 1."""
    torch.manual_seed(3)
    layer = MultiHeadSelfAttention(32, 4, dropout=0.1)
    x = torch.randn(1, 12, 32)
    layer.train()
    _, first = layer(x)
    _, second = layer(x)
    assert not torch.equal(first, second)
    assert (first.sum(-1) - 1).abs().max() > 0.01  # dropped and rescaled rows no longer sum to 1
    layer.eval()
    _, first = layer(x)
    _, second = layer(x)
    assert torch.equal(first, second)
    assert_close(first.sum(-1), torch.ones(1, 4, 12))


def test_forward_keeps_no_state():
    layer = MultiHeadSelfAttention(8, 2).eval()
    before = dict(vars(layer))
    layer(torch.randn(1, 3, 8))
    assert vars(layer).keys() == before.keys()
    assert all(vars(layer)[k] is before[k] for k in before if not k.startswith("_"))


def test_indivisible_size_is_refused():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadSelfAttention(10, 3)


def test_an_all_ones_mask_is_the_same_as_none_bit_for_bit():
    torch.manual_seed(5)
    layer = MultiHeadSelfAttention(16, 4).eval()
    x = torch.randn(2, 6, 16)
    with_mask, without = layer(x, torch.ones(2, 6, dtype=torch.int64)), layer(x)
    assert torch.equal(with_mask[0], without[0]) and torch.equal(with_mask[1], without[1])
    _, padded = layer(x, torch.tensor([[1] * 6, [1] * 4 + [0] * 2]))  # one padded row: the mask still applies
    assert torch.equal(padded[1, :, :, 4:], torch.zeros(4, 6, 2))


def _formula(q, k, v, mask=None, scaling=0.3):
    """Attention written out of place, as transformers' eager path does."""
    weights = torch.softmax(q @ k.transpose(-2, -1) * scaling + (0 if mask is None else mask), dim=-1)
    return weights @ v, weights


@pytest.mark.parametrize("padded", [False, True])
def test_scores_under_inference_mode_are_the_formula_bit_for_bit(padded):
    """Under inference mode (every caller in the package) the weights and context are the formula's bits."""
    torch.manual_seed(7)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    mask = key_padding_mask(torch.tensor([[1] * 5, [1, 1, 1, 0, 0]]), q.dtype) if padded else None
    with torch.inference_mode():
        context, weights = scaled_dot_product_attention(q, k, v, mask, 0.3)
    expected_context, expected = _formula(q, k, v, mask)
    assert torch.equal(weights, expected) and torch.equal(context, expected_context)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch.func
def test_autograd_forward_ad_and_vmap_still_work():
    """Autograd, forward-mode AD and ``torch.func.vmap`` (also under inference mode) give the formula's bits."""
    torch.manual_seed(8)
    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    leaf = q.clone().requires_grad_(True)
    context, weights = scaled_dot_product_attention(leaf, k, v, None, 0.3)
    assert torch.equal(weights.detach(), _formula(q, k, v)[1])
    (grad,) = torch.autograd.grad(context.sum(), leaf)
    leaf.grad = None
    assert torch.equal(grad, torch.autograd.grad(_formula(leaf, k, v)[0].sum(), leaf)[0])

    def ours(q):
        return scaled_dot_product_attention(q, k, v, None, 0.3)[1]

    def theirs(q):
        return _formula(q, k, v)[1]

    tangent = torch.ones_like(q)
    assert all(map(torch.equal, torch.func.jvp(ours, (q,), (tangent,)), torch.func.jvp(theirs, (q,), (tangent,))))
    stacked = torch.stack([q, q * 2, -q])
    with torch.inference_mode():  # vmap keeps inference mode on
        assert torch.equal(torch.func.vmap(ours)(stacked), torch.func.vmap(theirs)(stacked))


def test_a_mask_that_widens_the_scores_broadcasts_as_before():
    """A mask of a larger batch than the query, or a per-head scaling, widens the scores out of place."""
    torch.manual_seed(9)
    q, k, v = (torch.randn(1, 2, 3, 4) for _ in range(3))
    mask = key_padding_mask(torch.tensor([[1, 1, 1], [1, 1, 0]]), q.dtype)  # (2, 1, 1, 3)
    scaling = torch.tensor([0.5, 0.25]).reshape(1, 2, 1, 1)
    with torch.inference_mode():
        context, weights = scaled_dot_product_attention(q, k, v, mask, scaling)
    assert weights.shape == (2, 2, 3, 3)
    expected_context, expected = _formula(q, k, v, mask, scaling)
    assert torch.equal(weights, expected) and torch.equal(context, expected_context)
