"""Property-based: generated texts of every script through extraction and the figure functions.

For any text (and pair): no exception but the documented "empty" refusal, every attention row sums to
1, one label per token, and the labels are what was typed, in order, skipping only whitespace and
characters BERT's normaliser deletes.
"""

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from attention_viz.extraction import InputError, encode, extract
from attention_viz.extraction.tokens import visible
from attention_viz.figures import THUMBNAIL_SIZE, attention_heatmap, difference_heatmap, head_grid
from attention_viz.figures.grid import thumbnail

# Samples of many scripts, so short generated texts mix them more often than uniform code points would.
SCRIPTS = [
    "The cat sat.",
    "Größe café naïve",
    "Съешь же ещё",
    "Καλημέρα κόσμε",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "你好，世界",
    "こんにちは世界",
    "안녕하세요",
    "สวัสดีชาวโลก",
    "👍🏽 🇯🇵 👨‍👩‍👧",
    "e\u0301\u0301 \u200b\ufeff\u00ad",
    "x" * 120,
    "\t\n\r\x00\x7f",
]
characters = st.characters(codec="utf-8", exclude_categories=("Cs",))
texts = st.lists(st.sampled_from(SCRIPTS) | st.text(characters, max_size=12), min_size=1, max_size=4).map(" ".join)


def _deleted(tokenizer, char: str) -> bool:
    return char.isspace() or not tokenizer(char, add_special_tokens=False)["input_ids"]


def _shown(text: str) -> tuple[str, list[int]]:
    """``text`` as labels draw it (control characters and other spaces as visible marks), and for each of its
    characters the index of the typed character it stands for."""
    parts = [visible(c) for c in text]
    return "".join(parts), [i for i, part in enumerate(parts) for _ in part]


def _find(text: str, origin: list[int], typed: str, start: int) -> int:
    """The first ``typed`` in ``text`` from ``start`` that neither begins nor ends inside the visible mark of one
    typed character (the label ``0`` is not the ``0`` of ``\\x80``, the mark of a deleted control character, nor
    the label ``\\`` its backslash)."""

    def whole(at: int) -> bool:  # a boundary between the marks of two typed characters
        return at in (0, len(text)) or origin[at] != origin[at - 1]

    found = text.find(typed, start)
    while found >= 0 and not (whole(found) and whole(found + len(typed))):
        found = text.find(typed, found + 1)
    return found


def _check_labels(tokenizer, encoding, texts_in_order) -> None:
    """Labels of each sentence appear in it in order (as labels draw it); what lies between is whitespace or
    deleted."""
    for segment, typed_text in enumerate(texts_in_order):
        text, origin = _shown(typed_text)

        def deleted(start: int, end: int, typed_text=typed_text, origin=origin) -> bool:
            return all(_deleted(tokenizer, typed_text[i]) for i in {origin[k] for k in range(start, end)})

        cursor = previous = 0
        for label, special, seg in zip(encoding.labels, encoding.special, encoding.segments, strict=True):
            if special or seg != segment:
                continue
            typed = label.removeprefix("##").removesuffix(" [UNK]")
            found = _find(text, origin, typed, cursor)
            elsewhere = found < 0 or not deleted(cursor, found)  # not right after what was read (or deleted)
            if label.startswith("##") and elsewhere and text.find(typed, previous) < cursor:
                # a piece of a character that NFD splits (Hangul, accents) shares that character (not a piece
                # after a deleted one: "U\x1fU" is the word "UU", pieces "U" and "##U")
                found = text.find(typed, previous)
            assert found >= 0, (label, text, cursor)
            assert deleted(cursor, found), (text[cursor:found], label)
            previous, cursor = found, max(cursor, found + len(typed))
        if not encoding.truncated:
            assert deleted(cursor, len(text)), text[cursor:]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, pair=st.none() | texts)
@example(text="\u200b", pair=None)
@example(text="The cat sat.", pair="\u200b")
@example(text="I have a new GPU! 你好", pair="a\u0301 b")
@example(text="010", pair=None)  # a piece ("##0") whose text also stands earlier in the word
@example(text="0\x1f0 a\u00a0b", pair=None)  # control characters and other spaces drawn as marks
@example(text="The cat sat.", pair="\x80\\0")  # a backslash after a control character's mark, which begins with one
@example(text="The cat sat.", pair="U\x1fU The cat sat.")  # the word "UU" once its control character goes
def test_any_text_through_extraction_and_figures(bundled, text, pair):
    try:
        result = extract(bundled, text, pair)
    except InputError as exc:
        assert exc.code == "empty"
        assert not bundled.tokenizer(text, add_special_tokens=False)["input_ids"]
        return
    encoding = result.encoding
    n = encoding.num_tokens
    assert result.weights.shape == (6, 12, n, n)
    np.testing.assert_allclose(result.weights.sum(-1), 1, atol=1e-5)
    assert len(encoding.labels) == len(encoding.tokens) == n
    assert encoding.token_type_ids.tolist() == encoding.segments.tolist()  # given == reported
    has_pair = pair is not None and bool(bundled.tokenizer(pair, add_special_tokens=False)["input_ids"])
    assert encoding.is_pair == has_pair
    _check_labels(bundled.tokenizer, encoding, [text, pair] if has_pair else [text])

    head = result.weights[3, 1]
    figure = attention_heatmap(head, encoding.labels, "layer 3, head 1")
    assert len(figure.data[0].y) == len(figure.data[0].x) == n
    np.testing.assert_allclose(np.asarray(figure.data[0].z).sum(-1), 1, atol=1e-5)
    assert len(difference_heatmap(head - head, encoding.labels).data[0].y) == n
    grid = head_grid(result.weights)
    layers, heads = result.weights.shape[:2]
    if n <= THUMBNAIL_SIZE:  # every head's thumbnail is its attention, the last head's included
        np.testing.assert_array_equal(thumbnail(grid, layers - 1, heads - 1), result.weights[-1, -1])
    np.testing.assert_allclose(np.nansum(thumbnail(grid, 0, 0), -1), 1, atol=1e-5)  # pooled rows still sum to 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_encoding_alone_is_consistent(bundled, text):
    try:
        encoding = encode(bundled.tokenizer, text)
    except InputError:
        return
    assert encoding.tokens[0] == "[CLS]" and encoding.tokens[-1] == "[SEP]"
    assert encoding.special.sum() == 2 and not encoding.is_pair
