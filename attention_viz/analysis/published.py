"""Heads that published work found doing something specific, to mark next to our statistics.

Clark, Khandelwal, Levy and Manning 2019, "What Does BERT Look At? An Analysis of BERT's Attention"
(BlackboxNLP, arXiv:1906.04341), evaluated every head of bert-base-uncased as a zero-parameter
classifier: a word's prediction is the word it attends to most. Table 1 gives the best head per
dependency relation (Penn Treebank WSJ, Stanford Dependencies), Table 2 the coreference head
(antecedent selection, CoNLL-2012). The paper writes heads as 1-based ``layer-head``; here they are
our 0-based ``(layer, head)``. Only the relations where the head clearly beats the fixed-offset
baseline are listed, with the paper's accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass

CLARK_2019 = (
    'Clark et al. 2019, "What Does BERT Look At? An Analysis of BERT\'s Attention" (arXiv:1906.04341), Tables 1 and 2'
)
# Hub names of the model the paper analysed; they load the same checkpoint.
CLARK_2019_MODELS = ("bert-base-uncased", "google-bert/bert-base-uncased")


@dataclass(frozen=True)
class PublishedHead:
    """One head's published finding.

    Attributes:
        layer, head: ours, from 0 (the paper's 1-based ``layer-head`` minus 1 each).
        paper_head: as the paper writes it, ``"8-10"``.
        relation: the relation's label in the paper (``dobj``) and in words.
        accuracy: the paper's accuracy for it, in percent.
        task: ``"syntax"`` (dependency relation) or ``"coreference"``.
    """

    layer: int
    head: int
    paper_head: str
    relation: str
    accuracy: float
    task: str


def _from_paper(paper_head: str, relation: str, accuracy: float, task: str = "syntax") -> PublishedHead:
    layer, head = (int(n) - 1 for n in paper_head.split("-"))
    return PublishedHead(layer, head, paper_head, relation, accuracy, task)


CLARK_2019_HEADS = (
    _from_paper("8-10", "dobj (direct object)", 86.8),
    _from_paper("8-11", "det (determiner)", 94.3),
    _from_paper("9-6", "pobj (object of preposition)", 76.3),
    _from_paper("7-6", "poss (possessive)", 80.5),
    _from_paper("4-10", "auxpass (passive auxiliary)", 82.5),
    _from_paper("6-7", "prt (particle)", 99.1),
    _from_paper("5-4", "coreference (antecedent selection)", 65.0, "coreference"),
)


def published_heads(model_name: str, num_layers: int, num_heads: int) -> tuple[PublishedHead, ...]:
    """The heads Clark et al. 2019 report, when ``model_name`` is the model they analysed.

    Args:
        model_name: the loaded model's name (a hub name, possibly with its ``google-bert/`` owner).
        num_layers, num_heads: the loaded model's shape (12 × 12 for bert-base-uncased), checked so that
            a different model under that name gets no marks.

    Returns:
        The heads, or ``()`` for any other model.
    """
    if model_name.strip().lower() not in CLARK_2019_MODELS or (num_layers, num_heads) != (12, 12):
        return ()
    return CLARK_2019_HEADS


def head_notes(heads: tuple[PublishedHead, ...], num_layers: int, num_heads: int) -> list[str]:
    """Per head, layer-major (``num_layers * num_heads``), the published findings as short text ("" for none)."""
    notes = [[] for _ in range(num_layers * num_heads)]
    for found in heads:
        notes[found.layer * num_heads + found.head].append(f"{found.relation.split(' ')[0]} {found.accuracy:g}%")
    return ["; ".join(n) for n in notes]


# GPT-2 small: the heads the TransformerLens and ARENA material (ARENA chapter 1.2, "Intro to Mechanistic
# Interpretability") finds with the same scores as :mod:`attention_viz.analysis.head_scores`, written there
# as 0-based ``layer.head``.
TRANSFORMER_LENS_GPT2 = (
    "TransformerLens / ARENA material on GPT-2 small (induction heads found by the induction score on "
    "repeated random tokens; 0-based layer.head)"
)
TRANSFORMER_LENS_GPT2_MODELS = ("gpt2", "openai-community/gpt2")
GPT2_SMALL_HEADS = (
    *(
        PublishedHead(layer, head, f"{layer}.{head}", "induction", float("nan"), "induction")
        for layer, head in ((5, 1), (5, 5), (6, 9), (7, 2), (7, 10))
    ),
    PublishedHead(4, 11, "4.11", "previous-token", float("nan"), "previous"),
)


def published_score_heads(model_name: str, num_layers: int, num_heads: int) -> tuple[PublishedHead, ...]:
    """The induction and previous-token heads published for GPT-2 small, when ``model_name`` is it.

    Args:
        model_name: the loaded model's name (``gpt2`` or ``openai-community/gpt2``).
        num_layers, num_heads: its shape, 12 × 12 for GPT-2 small (checked, as for
            :func:`published_heads`).

    Returns:
        The heads (``task`` is ``"induction"`` or ``"previous"``; ``accuracy`` NaN: the material gives
        no single number), or ``()`` for any other model.
    """
    if model_name.strip().lower() not in TRANSFORMER_LENS_GPT2_MODELS or (num_layers, num_heads) != (12, 12):
        return ()
    return GPT2_SMALL_HEADS
