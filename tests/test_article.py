"""The seed article's layer, reproduced: scaling by √embed_size, per-head slices sharing one projection,
projections never applied, and its -1e20 mask."""

import pytest
import torch
from torch.testing import assert_close

from attention_viz.models.article import ArticleSelfAttention


def _identity_projections(layer):
    with torch.no_grad():
        for linear in (layer.values, layer.keys, layer.queries):
            linear.weight.copy_(torch.eye(layer.head_dim))


@pytest.mark.parametrize(
    "raw, expected",
    [([8, 0, 0, 0], [0.3219, 0.2260, 0.2260, 0.2260]), ([16, 8, 0, 0], [0.3720, 0.2612, 0.1834, 0.1834])],
)
def test_article_divides_by_sqrt_embed_size(raw, expected):
    """Embed 512, 8 heads, raw scores [8, 0, 0, 0] or [16, 8, 0, 0]: divided by √512, not √64."""
    layer = ArticleSelfAttention(512, 8)
    _identity_projections(layer)
    query = torch.zeros(1, 1, 512)
    query[0, 0, 0] = 1.0  # head 0's slice
    keys = torch.zeros(1, 4, 512)
    keys[0, :, 0] = torch.tensor(raw, dtype=torch.float32)
    _, attention = layer(keys, keys, query, None)
    assert_close(attention[0, 0, 0], torch.tensor(expected), atol=1e-4, rtol=0)


@pytest.mark.parametrize("apply_projections", [True, False])
def test_article_head_with_a_zero_slice_is_uniform_whatever_the_weights(apply_projections):
    """Embed 4, 2 heads, tokens whose first two features are 0: the article projects each head's slice,
    so head 0 sees only zeros and attends exactly 1/3 everywhere; head 1 does not."""
    torch.manual_seed(0)
    layer = ArticleSelfAttention(4, 2, apply_projections=apply_projections)
    tokens = torch.tensor([[[0.0, 0, 1, 2], [0, 0, 3, 4], [0, 0, 5, 6]]])
    _, attention = layer(tokens, tokens, tokens, None)
    assert torch.equal(attention[0, 0], torch.full((3, 3), 1 / 3))
    assert (attention[0, 1] - 1 / 3).abs().max() > 1e-3


def test_article_projections_have_3_head_dim_squared_weights():
    """One d × d projection shared by all heads: 3·64·64 = 12,288 weights at embed 512, 8 heads."""
    layer = ArticleSelfAttention(512, 8)
    qkv = sum(p.numel() for m in (layer.values, layer.keys, layer.queries) for p in m.parameters())
    assert qkv == 3 * 64 * 64 == 12_288


def test_printed_code_never_applies_its_projections():
    torch.manual_seed(1)
    x = torch.randn(1, 5, 8)
    printed = ArticleSelfAttention(8, 2, apply_projections=False)
    intended = ArticleSelfAttention(8, 2)
    intended.load_state_dict(printed.state_dict())
    _, a = printed(x, x, x, None)
    _, b = intended(x, x, x, None)
    assert not torch.allclose(a, b)
    with torch.no_grad():
        printed.queries.weight.mul_(5)  # unused weights change nothing
    _, c = printed(x, x, x, None)
    assert torch.equal(a, c)


def test_article_mask_of_minus_1e20_overflows_in_float16():
    layer = ArticleSelfAttention(8, 2).half()
    x = torch.randn(1, 4, 8).half()
    mask = torch.tensor([1, 1, 0, 0])
    with pytest.raises(RuntimeError, match="overflow"):
        layer(x, x, x, mask)


def test_mask_in_float32_zeroes_masked_keys():
    layer = ArticleSelfAttention(8, 2)
    x = torch.randn(2, 4, 8)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])[:, None, None, :]
    _, attention = layer(x, x, x, mask)
    assert torch.equal(attention[0, ..., 3], torch.zeros(2, 4))
    assert_close(attention.sum(-1), torch.ones(2, 2, 4))
