"""Text as it arrives: Unicode spaces and control characters in labels, special tokens typed as text, and
corpus files with a byte-order mark, unusual line separators and blank lines."""

import json
import re

import numpy as np
import plotly.io as pio
import pytest

from attention_viz.analysis import parse_corpus
from attention_viz.analysis.corpus import blank_lines, corpus_lines
from attention_viz.extraction import encode
from attention_viz.extraction.tokens import visible, whitespace_label
from attention_viz.figures import attention_heatmap

# No-break space, en/em/thin/hair spaces, narrow no-break, medium mathematical, ideographic, Ogham space mark
SPACES = "\u00a0\u2002\u2003\u2009\u200a\u202f\u205f\u3000\u1680"
CONTROLS = "\x07\x1b\x00\x7f\x85\x9b"
C0_C1 = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize("family", ["roberta", "gpt2", "xlm-roberta", "bert"])
@pytest.mark.parametrize("space", list(SPACES))
def test_every_unicode_space_is_the_space_mark_never_a_byte_glyph(family_model, family, space):
    """Each label is made of characters that were typed, or is the space mark: byte-level BPE's pieces of a
    no-break space (``Â`` ``ł``) or an em space (``â`` ``Ģ`` ``ĥ``) used to show as their byte glyphs."""
    tokenizer = family_model(family).tokenizer
    text = f"a{space}cat sat{space}{space}on"
    encoding = encode(tokenizer, text)
    typed = set(text) | {"␣"}
    for label, special in zip(encoding.labels, encoding.special, strict=True):
        if not special:
            assert set(label.removeprefix("##")) <= typed - set(SPACES), encoding.labels
    if family in ("roberta", "gpt2"):  # the premise: byte-level BPE has byte pieces for the space
        assert encoding.labels.count("␣") >= 2, (encoding.tokens, encoding.labels)


@pytest.mark.parametrize("family", ["roberta", "gpt2", "bert", "xlm-roberta"])
def test_control_characters_are_drawn_visibly_in_labels_words_and_the_figure(family_model, family):
    """A bell, an escape, NUL, DEL and C1 controls never reach a label, a word or a figure's JSON as the raw
    character (a font draws it as a box, and SVG refuses it, so the chart's PNG export saved nothing)."""
    tokenizer = family_model(family).tokenizer
    text = "ring\x07 the bell\x1b now\x7f or\x85 never\x9b !"
    encoding = encode(tokenizer, text)
    assert not any(C0_C1.search(label) for label in encoding.labels), encoding.labels
    assert not any(C0_C1.search(word) for word in encoding.words), encoding.words
    shown = "".join(encoding.labels)
    if family in ("roberta", "gpt2"):  # byte-level BPE keeps every control: each is shown as its picture
        assert "␇" in shown and "␛" in shown and "␡" in shown and "\\x85" in shown, encoding.labels
    figure = attention_heatmap(np.full((encoding.num_tokens,) * 2, 1 / encoding.num_tokens), encoding.labels)
    assert not any(C0_C1.search(text) for text in _strings(json.loads(pio.to_json(figure))))


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


def test_visible_marks_of_each_kind():
    assert visible("a\x07b\x1bc\x00d\x7fe\x85f") == "a␇b␛c␀d␡e\\x85f"
    assert visible("plain text, 你好 🙂") == "plain text, 你好 🙂"
    assert whitespace_label(" \u00a0\u3000\n\t") == "␣␣␣⏎⇥"
    assert whitespace_label("\x1c") == "␜"  # a separator control Python counts as whitespace: its picture


def test_gpt2_typed_end_of_text_is_labelled_as_that_special_token(family_model):
    """GPT-2's unknown token is ``<|endoftext|>`` (one id): typed, it was labelled
    ``<|endoftext|> <|endoftext|>`` as if the model had not known the text."""
    tokenizer = family_model("gpt2").tokenizer
    encoding = encode(tokenizer, "one<|endoftext|>two")
    position = encoding.tokens.index("<|endoftext|>")
    assert encoding.labels[position] == "<|endoftext|>"
    assert encoding.input_ids[position] == tokenizer.convert_tokens_to_ids("<|endoftext|>") == tokenizer.unk_token_id


def test_bert_typed_unknown_and_separator_are_labelled_as_the_special_tokens(bundled):
    encoding = encode(bundled.tokenizer, "a [SEP] b [UNK] c")
    assert encoding.labels == ("[CLS]", "a", "[SEP]", "b", "[UNK]", "c", "[SEP]")


# --- corpus files ------------------------------------------------------------------------------------------

LINES = ["The cat sat on the mat.", "它累了。\tIt was tired.", "Where is it?"]


def test_a_corpus_line_ends_at_newline_or_crlf_only():
    """Form feed, vertical tab, file/group/record separators, NEL and the Unicode line and paragraph
    separators are inside a line: ``str.splitlines()`` split this file of 3 lines into 11 texts."""
    inner = "a\x0cb\x0bc\x1cd\x1de\x1ef\x85g\u2028h\u2029i"
    text = f"{inner}\r\n{LINES[0]}\n{LINES[1]}\r\n"
    texts = parse_corpus(text)
    assert len(texts) == 3
    assert texts[0] == (inner, None) and texts[2] == ("它累了。", "It was tired.")
    assert corpus_lines(text) == [inner, LINES[0], LINES[1]]


def test_a_byte_order_mark_is_not_part_of_the_first_text():
    plain = "\n".join(LINES) + "\n"
    assert parse_corpus("\ufeff" + plain) == parse_corpus(plain)
    assert parse_corpus(("\ufeff" + plain).encode("utf-8").decode("utf-8-sig"))[0][0] == LINES[0]


def test_blank_lines_are_counted():
    text = f"{LINES[0]}\n\n   \n{LINES[2]}\n\t\n"  # two blank lines, one of spaces, one of a tab only
    assert blank_lines(text) == 3 and len(parse_corpus(text)) == 2
    assert blank_lines("one\ntwo\n") == 0 and blank_lines("one\r\n\r\ntwo") == 1


def test_an_uploaded_file_with_a_byte_order_mark_gives_the_statistics_of_the_file_without(family_model):
    """The app's upload path: decoded as ``utf-8-sig``; a RoBERTa counted the mark as tokens of the first text."""
    from attention_viz.ui.server import cache_heads
    from attention_viz.ui.shared.corpus_picker import decode_upload

    loaded = family_model("roberta")
    plain = "The cat sat on the mat.\n\nWhere is it?\x85 In the box.\n"
    with_mark = decode_upload(b"\xef\xbb\xbf" + plain.encode("utf-8"))
    assert with_mark == plain
    cache_heads._corpus_runs().clear()
    result = cache_heads.corpus_statistics(loaded, with_mark, 4, False)
    assert result.num_texts == 2 and result.num_skipped == 1  # the blank line, counted in the note
    direct = parse_corpus(plain)
    assert direct[1] == ("Where is it?\x85 In the box.", None)


def test_cli_stats_reads_a_byte_order_mark_crlf_and_separators_as_the_lines_they_are(capsys, family_dir, tmp_path):
    from attention_viz.cli import main

    lines = ["The cat sat on the mat.", "Where is it?\u2028It is in the box.\x0c", "Attention is all you need."]
    outputs = []
    for name, data in (
        ("plain.txt", "\n".join(lines) + "\n\n"),
        ("marked.txt", "\ufeff" + "\r\n".join(lines) + "\r\n\r\n"),
    ):
        (tmp_path / name).write_bytes(data.encode("utf-8"))
        assert main(["stats", str(tmp_path / name), "--model", family_dir("roberta"), "--format", "json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    for payload in outputs:
        assert (payload["num_texts"], payload["num_skipped"]) == (3, 1)
    assert outputs[0]["num_tokens"] == outputs[1]["num_tokens"]
    assert outputs[0]["heads"] == outputs[1]["heads"]
