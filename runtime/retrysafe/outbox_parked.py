"""Alias of :mod:`retrysafe.outbox.parked`, kept for runbooks that call ``python -m retrysafe.outbox_parked``.

New code and new runbooks use :mod:`retrysafe.outbox.parked` (``python -m retrysafe.outbox.parked``).
"""

import sys

from .outbox.parked import ParkedEvent, list_parked, main, republish

__all__ = ["ParkedEvent", "list_parked", "main", "republish"]

if __name__ == "__main__":
    sys.exit(main())
