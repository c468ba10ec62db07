"""Profile head changes with pyinstrument: ``python -m benchmarks.profile_rerun [--tokens 512] [--page all_heads]``.

Opens the app in AppTest on a text of ``--tokens`` tokens, warms up, then profiles ``--changes`` head
changes and prints pyinstrument's call tree (pyinstrument is in benchmarks/requirements.txt).
"""

from __future__ import annotations

import argparse
import functools
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_rerun")
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--page", choices=("compare", "all_heads"), default="compare")
    parser.add_argument("--changes", type=int, default=6)
    args = parser.parse_args()

    from pyinstrument import Profiler
    from pyinstrument.renderers import ConsoleRenderer
    from pyinstrument.session import Session
    from streamlit.testing.v1 import AppTest
    from streamlit.testing.v1.local_script_runner import LocalScriptRunner

    from attention_viz.models.loading import load_model
    from benchmarks.apptest import ALL_HEADS, APP, _step
    from benchmarks.harness import text_of_tokens

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["text"] = text_of_tokens(load_model().tokenizer, args.tokens)
    at.run()
    if args.page == "all_heads":
        at.switch_page(ALL_HEADS).run()
    for _ in range(2):
        _step(at, "head", 12)
        at.run()
    # AppTest runs the script in a new thread per rerun, and pyinstrument samples one thread: profile
    # inside each script thread and combine the sessions.
    sessions = []
    real = LocalScriptRunner._run_script_thread

    def profiled(self):
        profiler = Profiler(interval=0.001)
        profiler.start()
        try:
            real(self)
        finally:
            sessions.append(profiler.stop())

    LocalScriptRunner._run_script_thread = profiled
    try:
        for i in range(args.changes):
            _step(at, "head" if i % 2 else "layer", 12 if i % 2 else 6)
            at.run()
    finally:
        LocalScriptRunner._run_script_thread = real
    session = functools.reduce(Session.combine, sessions)
    print(ConsoleRenderer(unicode=True, color=False, show_all=False, short_mode=False).render(session))


if __name__ == "__main__":
    main()
