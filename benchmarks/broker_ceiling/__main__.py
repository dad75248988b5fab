"""``python -m benchmarks.broker_ceiling``: the command line (:mod:`.cli`)."""

import sys

from .cli import main

sys.exit(main())
