"""``python -m aiokafka_lite``: the command line (see :mod:`aiokafka_lite.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
