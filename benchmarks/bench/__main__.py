"""``python -m benchmarks.bench``: the command line (:mod:`.cli`)."""

import sys

from .cli import main

sys.exit(main())
