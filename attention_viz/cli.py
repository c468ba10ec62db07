"""Command line: ``python -m attention_viz attention TEXT [options]`` prints attention as JSON or CSV.

Exit status 0 on success; 2 with one ``error: ...`` line on stderr for bad input or a model that
cannot be loaded.
"""

from __future__ import annotations

import argparse
import json
import os
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
        help="from-scratch variant (with --source scratch; default exact)",
    )
    attention.add_argument("--seed", type=int, help="seed of the random variant (default 0)")
    attention.add_argument("--layer", type=int, help="only this layer (from 0)")
    attention.add_argument("--head", type=int, help="only this head (from 0)")
    attention.add_argument("--format", choices=("json", "csv"), default="json")
    return parser


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options that would be ignored or cannot work, before any model is loaded."""
    if not args.text.strip():
        raise _UsageError("the text is empty: type a sentence")
    if args.format == "csv" and (args.layer is None or args.head is None):
        raise _UsageError("--format csv prints one head: give both --layer and --head")
    if args.source == "pretrained" and (args.variant or args.seed is not None):
        raise _UsageError("--variant and --seed apply to the from-scratch encoder: add --source scratch")
    if args.seed is not None and (args.variant != Variant.RANDOM or args.seed < 0):
        raise _UsageError("--seed takes a number from 0, and only with --variant random")


def _check_range(name: str, value: int | None, count: int) -> None:
    if value is not None and not 0 <= value < count:
        raise _UsageError(f"{name} {value} is out of range: this model has {name}s 0-{count - 1}")


def _run(args: argparse.Namespace) -> str:
    from attention_viz import export
    from attention_viz.extraction import extract
    from attention_viz.loading import load_model

    _check_options(args)
    loaded = load_model(args.model)
    _check_range("layer", args.layer, loaded.info.num_layers)
    _check_range("head", args.head, loaded.info.num_heads)
    variant = args.variant or Variant.EXACT.value
    result = extract(loaded, args.text, args.pair, args.source, variant, args.seed or 0)
    if args.format == "csv":
        return export.matrix_csv(result.weights[args.layer, args.head], result.encoding.labels)
    return json.dumps(export.attention_payload(result, args.layer, args.head)) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 done, 1 output failed, 2 bad input)."""
    from huggingface_hub.utils import logging as hub_logging

    from attention_viz.extraction import AttentionError, InputError
    from attention_viz.loading import ModelLoadError
    from attention_viz.settings import SettingsError

    hub_logging.set_verbosity_error()  # no download-retry chatter: stderr is one line on failure
    try:
        output = _run(build_parser().parse_args(argv))
    except (_UsageError, InputError, AttentionError, ModelLoadError, SettingsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(output)
        sys.stdout.flush()
    except OSError as exc:
        print(f"error: could not write the output: {exc.strerror or exc}", file=sys.stderr)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 1
    return 0
