"""Command line: ``python -m attention_viz attention TEXT [options]`` prints attention as JSON or CSV.

Exit status 0 on success; 2 with one ``error: ...`` line on stderr for bad input or a model that
cannot be loaded.
"""

from __future__ import annotations

import argparse
import json
import sys

from attention_viz.encoder import Variant
from attention_viz.extraction import SOURCES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m attention_viz", description="Attention weights of a BERT model.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    attention = commands.add_parser("attention", help="print the attention for a text or a sentence pair")
    attention.add_argument("text", help="the sentence (sentence A of a pair)")
    attention.add_argument("--pair", help="sentence B of a pair")
    attention.add_argument(
        "--model", default=None, help="hub name or local folder (default: the bundled all-MiniLM-L6-v2)"
    )
    attention.add_argument("--source", choices=SOURCES, default="pretrained")
    attention.add_argument(
        "--variant",
        choices=[v.value for v in Variant],
        default=Variant.EXACT.value,
        help="from-scratch variant (with --source scratch)",
    )
    attention.add_argument("--seed", type=int, default=0, help="seed of the random variant")
    attention.add_argument("--layer", type=int, help="only this layer (from 0)")
    attention.add_argument("--head", type=int, help="only this head (from 0)")
    attention.add_argument("--format", choices=("json", "csv"), default="json")
    return parser


def _select(weights, layer: int | None, head: int | None):
    """Index ``(layers, heads, query, key)`` by the given layer and/or head, checking the range."""
    layers, heads = weights.shape[:2]
    if layer is not None and not 0 <= layer < layers:
        raise _UsageError(f"layer {layer} is out of range: this model has layers 0-{layers - 1}")
    if head is not None and not 0 <= head < heads:
        raise _UsageError(f"head {head} is out of range: this model has heads 0-{heads - 1}")
    if layer is not None:
        weights = weights[layer]
    if head is not None:
        weights = weights[head] if layer is not None else weights[:, head]
    return weights


def _run(args: argparse.Namespace) -> str:
    from attention_viz.extraction import extract
    from attention_viz.loading import load_model

    if not args.text.strip():
        raise _UsageError("the text is empty: type a sentence")
    if args.format == "csv" and (args.layer is None or args.head is None):
        raise _UsageError("--format csv prints one head: give both --layer and --head")
    result = extract(load_model(args.model), args.text, args.pair, args.source, args.variant, args.seed)
    weights = _select(result.weights, args.layer, args.head)
    encoding = result.encoding
    if args.format == "csv":
        import pandas as pd

        frame = pd.DataFrame(weights, index=list(encoding.labels), columns=list(encoding.labels))
        return frame.rename_axis("query \\ key").to_csv(float_format="%.8g")
    payload = {
        "model": result.model_name,
        "source": result.source,
        "variant": result.variant,
        "seed": result.seed,
        "tokens": list(encoding.tokens),
        "labels": list(encoding.labels),
        "segments": encoding.segments.tolist(),
        "num_layers": int(result.weights.shape[0]),
        "num_heads": int(result.weights.shape[1]),
        "layer": args.layer,
        "head": args.head,
        "num_input_tokens": encoding.num_input_tokens,
        "truncated": encoding.truncated,
        "attention": weights.tolist(),
    }
    return json.dumps(payload)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from attention_viz.extraction import AttentionError, InputError
    from attention_viz.loading import ModelLoadError

    try:
        args = build_parser().parse_args(argv)
        sys.stdout.write(_run(args) + ("" if args.format == "csv" else "\n"))
    except (_UsageError, InputError, AttentionError, ModelLoadError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
