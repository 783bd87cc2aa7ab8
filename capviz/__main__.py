"""``python -m capviz``: the ``capviz`` command."""

import sys

from capviz.cli import main

sys.exit(main())
