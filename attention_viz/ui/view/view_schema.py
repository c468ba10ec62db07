"""The view's schema: every setting of the view, its default, and what a link may set it to.

No widgets and no session: the settings' names and defaults (:data:`DEFAULTS`), the allowed values and
ranges a link is checked against (:data:`CHOICES`, :data:`RANGES`), values and pages that older links
named otherwise (:data:`ALIASES`, :data:`RENAMED_PAGES`), and the rules built from them
(:func:`link_rules`). The session's values live in ``st.session_state`` under these keys
(:mod:`attention_viz.ui.view.state`); the URL (:mod:`attention_viz.ui.view.url_state`) and the widgets
(:mod:`attention_viz.ui.view.widgets`) read and write them.
"""

from __future__ import annotations

from attention_viz import links
from attention_viz.analysis import BLOCKS, STATISTICS, presets
from attention_viz.analysis.atlas import KINDS as ATLAS_KINDS
from attention_viz.analysis.atlas import NUMBERS as ATLAS_NUMBERS
from attention_viz.analysis.head_scores import SCORES
from attention_viz.analysis.knockout import SCOPES as KNOCKOUT_SCOPES
from attention_viz.analysis.minimal_pairs import MEASURES as PAIR_MEASURES
from attention_viz.analysis.minimal_pairs import PRESETS as PAIR_PRESETS
from attention_viz.analysis.steps import SCALINGS
from attention_viz.extraction.seq2seq import KINDS as SEQ2SEQ_KINDS
from attention_viz.models.encoder import Variant
from attention_viz.models.loading import BUNDLED_MODEL
from attention_viz.ui.text.i18n import DEFAULT_LANGUAGE, LANGUAGE_KEY, LANGUAGES

# The example the app opens on, and the text, layer and head it sets (assets/presets/presets.toml).
OPENING = presets.opening()
EXAMPLE_TEXT, EXAMPLE_LAYER, EXAMPLE_HEAD = OPENING.text, OPENING.layer, OPENING.head
MAP_VIEWS = ("pretrained", "scratch", "difference")  # the maps Compare draws large
ROLLOUT_MAPS = ("raw", "rollout", "norm")  # the maps Rollout & norms draws
SCOPES = ("text", "bundled", "upload")  # what Head statistics and Head similarity run over
ATLAS_SOURCES = ("bundled", "upload")  # the Head atlas: built from the bundled corpus, or a saved file
EXPERIMENTS = ("knockout", "pairs", "predictions")  # the Experiments page's three views
MAX_GENERATED = 32  # the most tokens a decoder is asked to generate after the text
BUNDLED_SHAPE = (6, 12)  # layers, heads of all-MiniLM-L6-v2: the controls' range before any model loaded

DEFAULTS = {
    "model": BUNDLED_MODEL,
    "text": OPENING.text,
    "pair": OPENING.pair,
    # An encoder–decoder (T5, BART): the target text the decoder reads (the source is "text"), and the attention
    # shown: the encoder's self-attention, the decoder's causal self-attention or the cross-attention.
    "target": "Das Tier überquerte die Straße nicht, weil es zu müde war.",
    "attention_kind": "cross",
    "generate": 0,  # target tokens the encoder–decoder writes itself (greedy) in place of the target text; 0: none
    "layer": OPENING.layer,
    "head": OPENING.head,
    "fit_range": False,
    "variant": Variant.EXACT.value,
    "seed": 0,
    "presentation": False,  # larger text, fonts and cells for a projector, on every page
    "map_view": "pretrained",  # the map in focus on Compare: pretrained, scratch or difference
    "focus": -1,  # the query token in focus (its bars, lines and outlined row), -1 for none
    "query_start": 0,  # the first query and key of the map's window when the tokens do not fit
    "key_start": 0,
    LANGUAGE_KEY: DEFAULT_LANGUAGE,
    # Inside a head: the query token (-1: the example's, else the first word), scaling, temperature
    # and the masked keys as comma-separated token positions.
    "inside_query": -1,
    "scaling": Variant.EXACT.value,
    "temperature": 1.0,
    "masked": "",
    # The article's layer: the article's differences switched on (comma-separated) and the weights' seed.
    "article_diffs": "shared,embed_scaling",
    "article_seed": 0,
    # View toggles of the heatmap views (attention_viz/ui/shared/view_options.py).
    "word_level": False,
    "hide_special": False,
    "block": "all",
    # Rollout & norms: the map shown and its window.
    "rollout_map": "raw",
    "rollout_query_start": 0,
    "rollout_key_start": 0,
    # Head statistics and Head similarity: over the text, the bundled corpus or an upload; the statistic shown.
    "stats_scope": "text",
    "similarity_scope": "text",
    "stats_statistic": "entropy",
    "stats_importance": False,
    # Named head scores: the random sequences (count, tokens per copy, seed), the score shown, All heads' colour.
    "scores_count": 10,
    "scores_length": 50,
    "scores_seed": 0,
    "scores_shown": "induction",
    "all_heads_colour": "attention",
    # Experiments: which one; the key knocked out and for which heads; the minimal pair, its query token,
    # measure and the head shown (an index into the ranking); the prediction's position.
    "experiment": "knockout",
    "knockout_key": -1,
    "knockout_scope": "head",
    "pairs_preset": "winograd",
    "pairs_a": PAIR_PRESETS["winograd"][0],
    "pairs_b": PAIR_PRESETS["winograd"][1],
    "pairs_query": -1,
    "pairs_measure": "js",
    "pairs_head": 0,
    "predict_position": -1,
    # Head atlas: where it comes from, importance by ablation asked for, the scatter's axes and colour, the
    # events shown and the one to open.
    "atlas_source": "bundled",
    "atlas_importance": False,
    "atlas_x": "special",
    "atlas_y": "top_weight",
    "atlas_colour": "layer",
    "atlas_kind": "top",
    "atlas_event": 0,
    # A decoder's continuation: the tokens the number box asks for, how many were generated (0: none, the text
    # alone), and the generation step shown (the maps over the text and that many generated tokens).
    "generate_tokens": 8,
    "generated": 0,
    "generation_step": 0,
}
# What a link may carry beyond its default's type (see attention_viz.links.Rules); add a key's
# allowed values or range here when its type alone is not enough.
CHOICES: dict[str, tuple] = {"variant": tuple(v.value for v in Variant), LANGUAGE_KEY: tuple(LANGUAGES)}
CHOICES["scaling"] = SCALINGS
CHOICES["attention_kind"] = SEQ2SEQ_KINDS
CHOICES["map_view"] = MAP_VIEWS
CHOICES["block"] = tuple(BLOCKS)
CHOICES["rollout_map"] = ROLLOUT_MAPS
CHOICES["stats_scope"] = CHOICES["similarity_scope"] = SCOPES
CHOICES["stats_statistic"] = (*STATISTICS, "importance")
CHOICES["scores_shown"] = tuple(SCORES)
CHOICES["all_heads_colour"] = ("attention", *SCORES)
CHOICES["experiment"] = EXPERIMENTS
CHOICES["knockout_scope"] = KNOCKOUT_SCOPES
CHOICES["pairs_preset"] = ("custom", *PAIR_PRESETS)
CHOICES["pairs_measure"] = PAIR_MEASURES
CHOICES["atlas_source"] = ATLAS_SOURCES
CHOICES["atlas_x"] = CHOICES["atlas_y"] = ATLAS_NUMBERS
CHOICES["atlas_colour"] = ("layer", *ATLAS_NUMBERS)
CHOICES["atlas_kind"] = ATLAS_KINDS
RANGES: dict[str, tuple] = {
    "layer": (0, 1023),
    "generate": (0, 64),
    "head": (0, 1023),
    "inside_query": (-1, 4095),
    "focus": (-1, 4095),  # -1: no token in focus
    "temperature": (0.1, 5.0),  # the Inside page slider's range
    "scores_count": (1, 50),
    "scores_length": (2, 4096),
    "scores_seed": (0, 9999),
    "knockout_key": (-1, 4095),
    "pairs_query": (-1, 4095),
    "pairs_head": (0, 11),
    "predict_position": (-1, 4095),
    "atlas_event": (0, 4095),
    "generate_tokens": (1, MAX_GENERATED),
    "generated": (0, MAX_GENERATED),
    "generation_step": (0, MAX_GENERATED),
}
# Values that older links wrote under other names.
ALIASES = {"scaling": {"bert": "exact", "article": "article-scaling", "none": "no-scaling"}}
PAGE_KEY = "page"  # the current page's name in the link (not a widget: the router owns it)
# The settings a person types: the sentence, the second sentence, the minimal pair's two sentences. A link too
# long for a proxy carries a beginning of them (links.to_query); every other setting goes into it whole.
FREE_TEXTS = ("text", "pair", "target", "pairs_a", "pairs_b")
RENAMED_PAGES = {"flow": "rollout"}  # links made before a page was renamed still open it


def link_rules(pages: tuple[str, ...] = ()) -> links.Rules:
    """What a link carries: every key of :data:`DEFAULTS` (whoever added it) and the page."""
    choices = dict(CHOICES, **({PAGE_KEY: pages} if pages else {}))
    return links.Rules({**DEFAULTS, PAGE_KEY: ""}, choices, RANGES, aliases=ALIASES, texts=FREE_TEXTS)


def stepped(layer: int, head: int, unit: str, delta: int, shape: tuple[int, int]) -> tuple[int, int]:
    """The head ``delta`` steps of ``unit`` (``"layer"`` or ``"head"``) away, wrapping around.

    Heads step through the model in reading order: after the last head of a layer comes head 0 of
    the next layer, after the very last head the first one. Layers keep the head.
    """
    layers, heads = shape
    if unit == "layer":
        return (layer + delta) % layers, head
    return divmod((layer * heads + head + delta) % (layers * heads), heads)
