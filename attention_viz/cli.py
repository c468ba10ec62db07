"""Command line, as ``attention-viz`` (the console script) or ``python -m attention_viz``:
``attention TEXT [options]`` prints attention as JSON or CSV; ``stats FILE [options]`` prints per-head
statistics over a corpus, and with ``--scores induction,previous,duplicate,sink`` named head scores on seeded
random tokens; ``atlas FILE --out ATLAS.parquet`` builds a head atlas (every head's strongest and typical
attention events over a corpus) and saves it as one Parquet file; ``app [streamlit options]`` starts the
web app (``streamlit run app.py`` in the checkout); ``model [--model M]`` prints what a model takes (parameters,
memory in float32, grouped heads, an estimate of a forward's time at 512 tokens).

Exit status 0 on success; 2 with one ``error: ...`` line on stderr for bad input, a corpus over the
limits, an invalid ``ATTENTION_VIZ_*`` setting (checked first), a model that cannot be loaded or a Ray
cluster that cannot run the job; 130 with one ``interrupted: ...`` line after Ctrl+C (SIGINT), nothing on
stdout. A note on stderr (``note: ...``) says when a model with one token type read a sentence pair as one
segment.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

from attention_viz import settings


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    from attention_viz.extraction import SOURCES  # torch: here, not at import, so that `app` starts at once
    from attention_viz.models.encoder import Variant

    prog = "attention-viz" if Path(sys.argv[0]).name == "attention-viz" else "python -m attention_viz"
    parser = _Parser(prog=prog, description="Attention weights of a BERT-family model or GPT-2, and the web app.")
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
    _add_atlas_parser(commands)
    model = commands.add_parser(
        "model",
        help="what a model takes: parameters, memory in float32, heads and their groups, a forward's time",
        description=MODEL_HELP,
    )
    model.add_argument("--model", default=None, help="hub name or local folder (default: the bundled model)")
    model.add_argument("--tokens", type=int, default=512, help="the length a forward's time is estimated for")
    app = commands.add_parser(
        "app",
        help="start the web app (streamlit run app.py); Streamlit's options follow, e.g. --server.port 8600",
        description=APP_HELP,
    )
    app.add_argument("options", nargs="*", metavar="STREAMLIT_OPTION", help="passed on to `streamlit run app.py`")
    return parser


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options that would be ignored or cannot work, before any model is loaded."""
    if not args.text.strip():
        raise _UsageError("the text is empty: type a sentence")
    if args.format == "csv" and (args.layer is None or args.head is None):
        raise _UsageError("--format csv prints one head: give both --layer and --head")
    if args.source == "pretrained" and (args.variant or args.seed is not None):
        raise _UsageError("--variant and --seed apply to the from-scratch encoder: add --source scratch")
    from attention_viz.models.encoder import Variant

    if args.seed is not None and (args.variant != Variant.RANDOM or args.seed < 0):
        raise _UsageError("--seed takes a number from 0, and only with --variant random")


def _check_range(name: str, value: int | None, count: int) -> None:
    if value is not None and not 0 <= value < count:
        raise _UsageError(f"{name} {value} is out of range: this model has {name}s 0-{count - 1}")


ONE_SEGMENT = "note: this model has one token type, so both sentences of a pair get token type 0"


def _run(args: argparse.Namespace) -> str:
    from attention_viz.extraction import export, extract
    from attention_viz.models.encoder import Variant
    from attention_viz.models.loading import load_model

    config = settings.load()  # an invalid ATTENTION_VIZ_* setting stops here, before any model loads
    if args.command == "stats":
        return _run_stats(args, config)
    if args.command == "atlas":
        return _run_atlas(args, config)
    if args.command == "model":
        return _run_model(args, config)

    _check_options(args)
    loaded = load_model(args.model, config.models)
    _check_range("layer", args.layer, loaded.info.num_layers)
    _check_range("head", args.head, loaded.info.num_heads)
    variant = args.variant or Variant.EXACT.value
    result = extract(loaded, args.text, args.pair, args.source, variant, args.seed or 0, config.limits)
    if result.encoding.one_segment:
        print(ONE_SEGMENT, file=sys.stderr)
    if args.format == "csv":
        return export.matrix_csv(result.weights[args.layer, args.head], result.encoding.labels)
    return json.dumps(export.attention_payload(result, args.layer, args.head)) + "\n"


INTERRUPTED = "interrupted (Ctrl+C): stopped without a result"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 done, 1 output failed, 2 bad input, 130
    interrupted). ``app`` does not return: the process becomes the Streamlit server (see :func:`run_app`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["app"] and not {"-h", "--help"} & set(argv[1:]):
        try:
            run_app(argv[1:])
        except _UsageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
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
    except KeyboardInterrupt:  # the run cleaned up on its way out (a Ray run ended its actors)
        print(INTERRUPTED, file=sys.stderr)
        return 130
    try:
        sys.stdout.write(output)
        sys.stdout.flush()
    except OSError as exc:
        print(f"error: could not write the output: {exc.strerror or exc}", file=sys.stderr)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 1
    return 0


def entry() -> None:
    """The program (``attention-viz``, ``python -m attention_viz``): :func:`main`, then exit with its status.
    After a Ray cluster that did not answer in time, the thread still waiting in Ray's client would abort the
    interpreter's exit (``std::bad_alloc``, status -6), so the program then leaves at once, output flushed."""
    status = main()
    if "attention_viz.analysis.distributed" in sys.modules:
        from attention_viz.analysis.distributed import stuck_connection

        if stuck_connection():
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    sys.exit(status)


# --- model: what a model takes ----------------------------------------------------------------------------

MODEL_HELP = (
    "Load a model and print as JSON what it takes: its parameters and their memory in float32 (weights are "
    "always held in float32), the memory available now, its query heads and the key/value heads they share "
    "(grouped-query attention), and an estimate of how long one forward at --tokens tokens takes here (one "
    "short forward timed and scaled by the floating-point operations). A model whose weights need more memory "
    "than is available is refused before it is read, with its size named."
)


def _run_model(args: argparse.Namespace, config: settings.Settings) -> str:
    from attention_viz.models.loading import load_model
    from attention_viz.runs import describe_model

    if args.tokens < 1:
        raise _UsageError("--tokens takes a number from 1")
    return json.dumps(describe_model(load_model(args.model, config.models), args.tokens, config.limits)) + "\n"


# --- app: the web app -------------------------------------------------------------------------------------

APP_HELP = (
    "Start the web app: `streamlit run app.py` in the source checkout this package is installed from (with "
    "`pip install -e .`, as requirements.txt does), from any folder. It runs in the checkout, so the "
    "checkout's .streamlit/config.toml and secrets.toml apply and a model folder typed in the app is read "
    "from there (type an absolute path). Every further option goes to `streamlit run` (see `streamlit run "
    "--help`), e.g. --server.port 8600 --server.address 0.0.0.0."
)
NO_CHECKOUT = (
    "`app` runs app.py from the source checkout, and this install has only the package (app.py and the map "
    "element's declaration in pyproject.toml are not part of it): clone the repository and install it with "
    "`pip install -e .` (requirements.txt does), then run `attention-viz app` or `streamlit run app.py` there"
)


def checkout_app(package: Path | None = None) -> Path | None:
    """The app's script: ``app.py`` in the source checkout this package was installed from, or ``None``.

    With an editable install (``pip install -e .``) the package folder (``package``, default this one) is the
    checkout's ``attention_viz/``, so ``app.py`` and ``pyproject.toml`` sit beside it. An install from a
    wheel has neither (both live outside the package), and then there is no app to run."""
    root = (package or Path(__file__).resolve().parent).parent
    app = root / "app.py"
    return app if app.is_file() and (root / "pyproject.toml").is_file() else None


def run_app(options: list[str]) -> None:
    """Replace this process with ``python -m streamlit run app.py OPTIONS`` in the checkout (its
    ``.streamlit/`` settings apply, as for ``streamlit run app.py`` typed there).

    A new interpreter, not Streamlit's CLI called in this one: ``app.py`` sets torch's OpenMP wait policy
    before torch is imported, and the process that stops on Ctrl+C or SIGTERM is the server itself (its exit
    status is the server's). Raises :class:`_UsageError` (exit status 2) without a checkout."""
    app = checkout_app()
    if app is None:
        raise _UsageError(NO_CHECKOUT)
    os.chdir(app.parent)
    os.execv(sys.executable, [sys.executable, "-m", "streamlit", "run", app.name, *options])


# --- stats: per-head statistics over a corpus file --------------------------------------------------


def _add_stats_parser(commands) -> None:
    stats = commands.add_parser(
        "stats",
        help="per-head statistics (Clark et al. 2019) over a text file, one text per line",
        description="One row per (layer, head): attention entropy, shares on [CLS]/[SEP]/punctuation/"
        "self/previous/next, mean distance, A→B/B→A shares for tab-separated pairs, and tags.",
    )
    stats.add_argument(
        "file",
        nargs="?",
        help="UTF-8 text file, one text per line; a tab splits a sentence pair (optional with --scores)",
    )
    stats.add_argument("--model", default=None, help="hub name or local folder (default: the bundled model)")
    stats.add_argument("--batch-size", type=int, default=16, help="texts per forward pass (default 16)")
    stats.add_argument("--importance", action="store_true", help="also head importance by ablation (slower)")
    stats.add_argument("--format", choices=("csv", "json"), default="csv")
    stats.add_argument(
        "--scores",
        help="also named head scores on seeded random tokens, comma-separated: "
        f"{','.join(_score_names())} (columns score_NAME and score_NAME_control, the same on a non-repeating control)",
    )
    stats.add_argument("--score-sequences", type=int, default=10, help="random sequences for --scores (default 10)")
    stats.add_argument("--score-length", type=int, default=50, help="random tokens per copy for --scores (default 50)")
    stats.add_argument("--score-seed", type=int, default=0, help="seed of the random sequences (default 0)")
    _add_ray_options(stats)


def _score_names() -> tuple[str, ...]:
    from attention_viz.analysis.head_scores import SCORES

    return tuple(SCORES)


def _chosen_scores(text: str | None) -> list[str]:
    if text is None:
        return []
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in _score_names()]
    if unknown or not chosen:
        raise _UsageError(f"--scores takes names from {','.join(_score_names())}, got {text!r}")
    return chosen


def _head_scores(loaded, args: argparse.Namespace, bars: list):
    """The named head scores of ``--score-sequences``, ``--score-length`` and ``--score-seed``."""
    from attention_viz.analysis import head_scores

    try:
        return head_scores.model_head_scores(
            loaded, args.score_sequences, args.score_length, args.score_seed, progress=_bar(bars, "scores", "sequence")
        )
    except ValueError as exc:
        raise _UsageError(str(exc)) from None


def _bar(bars: list, desc: str, unit: str):
    """A ``progress(done, total)`` that draws a bar on stderr, started at the first call (after the input was
    checked: a refusal is one line) and kept in ``bars`` to be closed."""
    from tqdm import tqdm

    own = []

    def advance(done: float, total: int) -> None:
        if not own:
            own.append(tqdm(total=total, unit=unit, file=sys.stderr, leave=False, desc=desc))
            bars.append(own[0])
        own[0].update(int(done) - own[0].n)

    return advance


def _read_corpus_file(path: str) -> tuple[str, list[tuple[str, str | None]]]:
    """``(text, texts)`` of a UTF-8 file (a byte-order mark is dropped; lines end at LF or CRLF only); an empty
    corpus is refused here, before a model loads."""
    from attention_viz.analysis import parse_corpus

    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:  # newline="": a lone CR is not a line break
            text = handle.read()
        return text, parse_corpus(text)
    except FileNotFoundError:
        raise _UsageError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise _UsageError(f"{path} is a folder: give a text file, one text per line") from None
    except UnicodeDecodeError:
        raise _UsageError(f"{path} is not UTF-8 text: save it as UTF-8, one text per line") from None
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _run_stats(args: argparse.Namespace, config: settings.Settings) -> str:
    from attention_viz.analysis.head_scores import score_columns
    from attention_viz.models.loading import load_model
    from attention_viz.runs import statistics_of_corpus

    if args.batch_size < 1:
        raise _UsageError(f"--batch-size must be at least 1, got {args.batch_size}")
    _check_ray_options(args)
    chosen = _chosen_scores(args.scores)
    if args.file is None and not chosen:
        raise _UsageError("give a text file, or --scores for named head scores on random tokens")
    text, texts = _read_corpus_file(args.file) if args.file is not None else ("", [])
    loaded = load_model(args.model, config.models)
    if loaded.encoder.config.type_vocab_size < 2 and any(pair for _, pair in texts):
        print(ONE_SEGMENT, file=sys.stderr)
    result, scores, bars = None, None, []
    try:
        if texts:
            run = dict(progress=_bar(bars, "stats", "text"), importance=args.importance)
            with _on_ray(args, config) as (limits, ray):
                result = statistics_of_corpus(loaded, text, args.batch_size, limits=limits, ray=ray, **run)
        if chosen:
            scores = _head_scores(loaded, args, bars)
    finally:
        for bar in bars:
            bar.close()
    frame = result.statistics if result is not None else None
    if chosen:
        columns = score_columns(scores, chosen)
        frame = columns if frame is None else frame.merge(columns, on=["layer", "head"], how="left")
    if args.format == "csv":
        return frame.to_csv(index=False, float_format="%.8g")
    payload = {"model": loaded.info.name}
    if result is not None:
        payload |= {"num_texts": result.num_texts, "num_skipped": result.num_skipped, "num_tokens": result.num_tokens}
    if scores is not None:
        payload["scores"] = {
            "sequences": scores.count,
            "length": scores.length,
            "seed": scores.seed,
            "tokens_per_sequence": scores.num_tokens,
            "seconds": round(scores.seconds, 3),
        }
    payload["heads"] = json.loads(frame.to_json(orient="records", double_precision=10))  # NaN becomes null
    return json.dumps(payload, ensure_ascii=False) + "\n"


# --- stats --ray: the same on a Ray cluster ---------------------------------------------------------


def _add_ray_options(stats) -> None:
    ray = stats.add_argument_group("on a Ray cluster (pip install -e '.[ray]')")
    ray.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run the batches on Ray actors; ADDRESS as ray.init takes it (ray://host:10001, auto); "
        "without it RAY_ADDRESS, a cluster started on this machine, or a new local one",
    )
    ray.add_argument(
        "--ray-workers", type=int, help="actors to start, at most the cluster's CPUs (default: the cluster's CPUs)"
    )
    ray.add_argument(
        "--ray-timeout",
        type=float,
        metavar="SECONDS",
        help="seconds the cluster has to answer, or a new local one to start (default 30)",
    )
    ray.add_argument("--max-texts", type=int, help="texts the corpus may have (with --ray; default the setting)")
    ray.add_argument("--max-tokens", type=int, help="tokens the corpus may have (with --ray; default the setting)")


_RAY_OPTIONS = ("ray_workers", "ray_timeout", "max_texts", "max_tokens")


def _check_ray_options(args: argparse.Namespace) -> None:
    given = [f"--{n.replace('_', '-')}" for n in _RAY_OPTIONS if getattr(args, n) is not None]
    if args.ray is None and given:
        raise _UsageError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for a Ray run: add --ray")
    for name in ("ray_workers", "max_texts", "max_tokens"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise _UsageError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    if args.ray_timeout is not None and not 0 < args.ray_timeout < float("inf"):
        raise _UsageError(f"--ray-timeout takes seconds above 0, got {args.ray_timeout:g}")


def _ray_address(args: argparse.Namespace) -> str | None:
    """Where ``--ray`` goes: its address; without one (or with ``auto``) ``RAY_ADDRESS`` when it is set, as Ray
    itself would read it; else None (a cluster started on this machine, or a new local one)."""
    if args.ray in (None, "", "auto") and os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    return args.ray or None


@contextlib.contextmanager
def _on_ray(args: argparse.Namespace, config: settings.Settings):
    """``(limits, ray)`` of a run: the settings' limits and None without ``--ray``; with it the limits that
    ``--max-texts`` and ``--max-tokens`` raise and the :class:`~attention_viz.runs.RayCluster` of ``--ray``,
    ``--ray-workers`` and ``--ray-timeout``, Ray's notices sent to stderr (stdout is the table's) and Ray's and
    the limits' errors turned into one line."""
    if args.ray is None:
        yield config.limits, None
        return
    import dataclasses

    from attention_viz.analysis.distributed import CONNECT_TIMEOUT_S, DistributedError, NotEnoughCPUsError
    from attention_viz.extraction import InputError
    from attention_viz.runs import RayCluster

    limits = dataclasses.replace(
        config.limits,
        max_corpus_texts=args.max_texts or config.limits.max_corpus_texts,
        max_corpus_tokens=args.max_tokens or config.limits.max_corpus_tokens,
    )
    timeout = args.ray_timeout or CONNECT_TIMEOUT_S
    ray = RayCluster(args.model, _ray_address(args), args.ray_workers, timeout, config.models)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield limits, ray
    except NotEnoughCPUsError as exc:
        if not exc.capacity:
            raise _UsageError(
                f"the Ray cluster has {exc.cpus:g} CPUs and a worker needs {exc.cpus_per_worker:g}"
            ) from None
        raise _UsageError(
            f"--ray-workers {exc.workers} needs {exc.workers * exc.cpus_per_worker:g} CPUs and the Ray cluster has "
            f"{exc.cpus:g}: give --ray-workers {exc.capacity} or fewer"
        ) from None
    except DistributedError as exc:
        raise _UsageError(str(exc)) from None
    except InputError as exc:
        if exc.code != "corpus_too_large":
            raise
        what, count, limit = (exc.fields[k] for k in ("what", "count", "limit"))
        raise _UsageError(
            f"the corpus has {count:,} {what}; the limit is {limit:,}: raise it with --max-{what}"
        ) from None


# --- atlas: every head's strongest and typical events over a corpus file ------------------------------


def _add_atlas_parser(commands) -> None:
    atlas = commands.add_parser(
        "atlas",
        help="a head atlas of a text file: every head's strongest and typical attention events, saved as Parquet",
        description="Every head's top query→key attention events over a corpus (folded by token pair, events "
        "onto [CLS]/[SEP] and onto the query itself left out) and a sample of typical events drawn in proportion "
        "to attention; with --out the atlas is saved as one Parquet file the app opens (Head atlas page).",
    )
    atlas.add_argument("file", help="UTF-8 text file, one text per line; a tab splits a sentence pair")
    atlas.add_argument("--out", help="write the atlas to this Parquet file (then nothing is printed)")
    atlas.add_argument("--model", default=None, help="hub name or local folder (default: the bundled model)")
    atlas.add_argument("--top", type=int, default=20, help="top events per head (default 20)")
    atlas.add_argument("--sample", type=int, default=20, help="typical events per head (default 20; 0 for none)")
    atlas.add_argument("--seed", type=int, default=0, help="seed of the typical sample (default 0)")
    atlas.add_argument("--no-fold", action="store_true", help="keep repeated (query token, key token) pairs apart")
    atlas.add_argument(
        "--keep-special", action="store_true", help="keep events onto special tokens and onto the query itself"
    )
    atlas.add_argument("--induction", action="store_true", help="also the induction score on random tokens")
    atlas.add_argument("--batch-size", type=int, default=16, help="texts per forward pass (default 16)")
    atlas.add_argument("--table", choices=("events", "heads"), default="events", help="what is printed")
    atlas.add_argument("--format", choices=("csv", "json"), default="csv")
    _add_ray_options(atlas)


def _run_atlas(args: argparse.Namespace, config: settings.Settings) -> str:
    from attention_viz.models.loading import load_model
    from attention_viz.runs import atlas_of_corpus

    for name in ("top", "batch_size"):
        if getattr(args, name) < 1:
            raise _UsageError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.sample < 0 or args.seed < 0:
        raise _UsageError("--sample and --seed take numbers from 0")
    _check_ray_options(args)
    out = Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():
        raise _UsageError(f"cannot write {out}: there is no folder {out.parent}")
    text, _ = _read_corpus_file(args.file)
    loaded = load_model(args.model, config.models)
    bars = []
    chosen = dict(top=args.top, sample=args.sample, seed=args.seed, fold=not args.no_fold, batch_size=args.batch_size)
    chosen |= dict(exclude=not args.keep_special, induction=args.induction, progress=_bar(bars, "atlas", "text"))
    try:
        with _on_ray(args, config) as (limits, ray):
            built = atlas_of_corpus(loaded, text, limits=limits, ray=ray, **chosen)
    finally:
        for bar in bars:
            bar.close()
    if out is not None:
        try:
            built.to_parquet(out)
        except OSError as exc:
            raise _UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
        print(
            f"wrote {out}: {len(built.events)} events of {len(built.heads)} heads, "
            f"{built.num_texts} texts in {built.seconds:.1f} s",
            file=sys.stderr,
        )
        return ""
    frame = built.events if args.table == "events" else built.heads
    if args.format == "csv":
        return frame.to_csv(index=False, float_format="%.8g")
    payload = {"model": built.model, "num_texts": built.num_texts, "options": built.options}
    payload[args.table] = json.loads(frame.to_json(orient="records", double_precision=10, force_ascii=False))
    return json.dumps(payload, ensure_ascii=False) + "\n"
