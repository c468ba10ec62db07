"""The examples: both languages, their tokens found, and each head shows what its line says."""

import numpy as np

from attention_viz.analysis import presets
from attention_viz.extraction import extract


def test_examples_cover_both_languages_and_every_kind():
    loaded = presets.load()
    assert {p.language for p in loaded} == {"en", "zh"}
    kinds = {p.id.removesuffix("_zh") for p in loaded}
    assert kinds == {"pronoun", "repeated", "pair", "punctuation", "long"}
    for preset in loaded:
        assert preset.title.keys() == preset.look_for.keys() == {"en", "zh"}, preset.id
        assert all(text.strip() for text in (*preset.title.values(), *preset.look_for.values()))
    assert all(p.pair for p in loaded if p.id.startswith("pair"))


def test_each_finding_is_what_its_head_does(bundled):
    for preset in presets.load():
        result = extract(bundled, preset.text, preset.pair or None)
        head = result.weights[preset.layer, preset.head]
        query, key, weight = presets.finding(preset, result.encoding, head)
        assert weight == head[query, key]
        if preset.id == "pronoun_zh":  # the counter-example: 它 and 猫 are [UNK] for this vocabulary
            assert result.encoding.tokens[query] == result.encoding.tokens[key] == "[UNK]"
            assert weight < 0.1
        else:  # the named key is the query's strongest key besides [CLS]/[SEP] (punctuation: the full stop)
            words = np.where(result.encoding.special, -1.0, head[query])
            assert key == int(np.argmax(words)), preset.id
            assert weight > 0.3, preset.id


def test_token_index_ignores_case_pieces_and_unk(bundled):
    result = extract(bundled, "The Cat and the cat; 猫")
    encoding = result.encoding
    assert presets.token_index(encoding, "cat", 2) == 5 and presets.token_index(encoding, "CAT") == 2
    assert presets.token_index(encoding, "猫") == 7 and presets.token_index(encoding, "dog") is None
    assert presets.token_index(encoding, "cat", 3) is None
