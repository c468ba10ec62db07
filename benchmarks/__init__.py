"""attention-viz's benchmark suite: ``python -m benchmarks`` (or ``--quick``); see ``benchmarks/__main__.py``."""
