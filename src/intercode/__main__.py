"""``python -m intercode`` is the ``intercode`` command."""

import sys

from intercode.cli import run

sys.exit(run())
