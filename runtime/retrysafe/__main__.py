"""``python -m retrysafe``: the operator's command line, as the ``retrysafe`` console script runs it."""

import sys

from ._cli import main

sys.exit(main())
