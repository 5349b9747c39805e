"""The user's pytest set-up: the table name the handlers' decorators read when they are imported.

In Lambda the constructs set ``RETRYSAFE_TABLE``; in tests the plugin's ``retrysafe_table`` fixture
creates the table this names, on moto.
"""

import os

os.environ.setdefault("RETRYSAFE_TABLE", "idempotency")
