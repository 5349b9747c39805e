"""``python -m retrysafe``: the operator's command line, as the ``retrysafe`` console script runs it."""

import sys

from ._cli import main

if __name__ == "__main__":  # not when a tool imports every module of the package (the API checks do)
    sys.exit(main())
