"""``python -m transformer ...`` and the console script ``transformer-interactive``: :mod:`transformer.train.cli`."""

import sys

from transformer.train.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m transformer"))
