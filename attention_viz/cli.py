"""Command line: ``python -m attention_viz attention TEXT [options]`` prints attention as JSON or CSV;
``python -m attention_viz stats FILE [options]`` prints per-head statistics over a corpus.

Exit status 0 on success; 2 with one ``error: ...`` line on stderr for bad input, a corpus over the
limits, an invalid ``ATTENTION_VIZ_*`` setting (checked first) or a model that cannot be loaded. A note on
stderr (``note: ...``) says when a model with one token type read a sentence pair as one segment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from attention_viz import settings
from attention_viz.extraction import SOURCES
from attention_viz.models.encoder import Variant


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m attention_viz", description="Attention weights of a BERT-family model or GPT-2.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    attention = commands.add_parser("attention", help="print the attention for a text or a sentence pair")
    attention.add_argument("text", help="the sentence (sentence A of a pair)")
    attention.add_argument("--pair", help="sentence B of a pair")
    attention.add_argument(
        "--model",
        default=None,
        help="hub name or local folder of a supported family (default: the bundled all-MiniLM-L6-v2)",
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
    _add_stats_parser(commands)
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


ONE_SEGMENT = "note: this model has one token type, so both sentences of a pair get token type 0"


def _run(args: argparse.Namespace) -> str:
    from attention_viz.extraction import export, extract
    from attention_viz.models.loading import load_model

    limits = settings.load().limits  # an invalid ATTENTION_VIZ_* setting stops here, before any model loads
    if args.command == "stats":
        return _run_stats(args, limits)

    _check_options(args)
    loaded = load_model(args.model)
    _check_range("layer", args.layer, loaded.info.num_layers)
    _check_range("head", args.head, loaded.info.num_heads)
    variant = args.variant or Variant.EXACT.value
    result = extract(loaded, args.text, args.pair, args.source, variant, args.seed or 0, limits)
    if result.encoding.one_segment:
        print(ONE_SEGMENT, file=sys.stderr)
    if args.format == "csv":
        return export.matrix_csv(result.weights[args.layer, args.head], result.encoding.labels)
    return json.dumps(export.attention_payload(result, args.layer, args.head)) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 done, 1 output failed, 2 bad input)."""
    from huggingface_hub.utils import logging as hub_logging

    from attention_viz.extraction import AttentionError, InputError
    from attention_viz.models.loading import ModelLoadError
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


# --- stats: per-head statistics over a corpus file --------------------------------------------------


def _add_stats_parser(commands) -> None:
    stats = commands.add_parser(
        "stats",
        help="per-head statistics (Clark et al. 2019) over a text file, one text per line",
        description="One row per (layer, head): attention entropy, shares on [CLS]/[SEP]/punctuation/"
        "self/previous/next, mean distance, A→B/B→A shares for tab-separated pairs, and tags.",
    )
    stats.add_argument("file", help="UTF-8 text file, one text per line; a tab splits a sentence pair")
    stats.add_argument("--model", default=None, help="hub name or local folder (default: the bundled model)")
    stats.add_argument("--batch-size", type=int, default=16, help="texts per forward pass (default 16)")
    stats.add_argument("--importance", action="store_true", help="also head importance by ablation (slower)")
    stats.add_argument("--format", choices=("csv", "json"), default="csv")


def _read_corpus_file(path: str) -> tuple[list[tuple[str, str | None]], int]:
    """``(texts, blank lines)`` of a UTF-8 file (a byte-order mark is dropped; lines end at LF or CRLF only)."""
    from attention_viz.analysis import parse_corpus
    from attention_viz.analysis.corpus import blank_lines

    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:  # newline="": a lone CR is not a line break
            text = handle.read()
        return parse_corpus(text), blank_lines(text)
    except FileNotFoundError:
        raise _UsageError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise _UsageError(f"{path} is a folder: give a text file, one text per line") from None
    except UnicodeDecodeError:
        raise _UsageError(f"{path} is not UTF-8 text: save it as UTF-8, one text per line") from None
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _run_stats(args: argparse.Namespace, limits: settings.Limits) -> str:
    from tqdm import tqdm

    from attention_viz.analysis import corpus_statistics
    from attention_viz.models.loading import load_model

    if args.batch_size < 1:
        raise _UsageError(f"--batch-size must be at least 1, got {args.batch_size}")
    texts, blank = _read_corpus_file(args.file)
    loaded = load_model(args.model)
    if loaded.encoder.config.type_vocab_size < 2 and any(pair for _, pair in texts):
        print(ONE_SEGMENT, file=sys.stderr)
    bars = []  # the bar starts with the run, after the corpus was checked: a refusal is one line

    def advance(done: float, total: int) -> None:
        if not bars:
            bars.append(tqdm(total=total, unit="text", file=sys.stderr, leave=False, desc="stats"))
        bars[0].update(int(done) - bars[0].n)

    try:
        result = corpus_statistics(
            loaded, texts, args.batch_size, progress=advance, importance=args.importance, limits=limits
        )
    finally:
        for bar in bars:
            bar.close()
    frame = result.statistics
    if args.format == "csv":
        return frame.to_csv(index=False, float_format="%.8g")
    payload = {
        "model": loaded.info.name,
        "num_texts": result.num_texts,
        "num_skipped": result.num_skipped + blank,  # blank lines too
        "num_tokens": result.num_tokens,
        "heads": json.loads(frame.to_json(orient="records", double_precision=10)),  # NaN becomes null
    }
    return json.dumps(payload, ensure_ascii=False) + "\n"
