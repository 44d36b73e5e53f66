"""``python -m intercode`` is the ``intercode`` command."""

import sys

from intercode.cli import main

sys.exit(main())
