"""``python -m attention_viz``: see :mod:`attention_viz.cli`."""

import sys

from attention_viz.cli import main

sys.exit(main())
