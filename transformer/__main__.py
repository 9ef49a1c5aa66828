"""``python -m transformer train ...`` / ``evaluate ...``: the training wing's command line
(:mod:`transformer.train.cli`)."""

import sys

from transformer.train.cli import main

sys.exit(main())
