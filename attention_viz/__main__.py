"""``python -m attention_viz``: see :mod:`attention_viz.cli`."""

from attention_viz.cli import entry

entry()
