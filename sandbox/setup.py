"""retrysafe-sandbox at retrysafe's version, requiring exactly that retrysafe.

The version is written once, as ``__version__`` in ``runtime/retrysafe/__init__.py``; built from a
checkout, it is read there; built from this distribution's sdist (which has no ``runtime/``), from
the sdist's own ``PKG-INFO``, written when the sdist was made.
"""

import email.parser
import re
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).parent


def version() -> str:
    """retrysafe's version: from the sdist's PKG-INFO, else from the runtime's sources."""
    if (HERE / "PKG-INFO").exists():
        return str(email.parser.Parser().parsestr((HERE / "PKG-INFO").read_text())["Version"])
    source = (HERE.parent / "runtime" / "retrysafe" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"$', source, re.MULTILINE)
    if match is None:
        raise SystemExit("runtime/retrysafe/__init__.py has no __version__ line")
    return match[1]


VERSION = version()
setup(
    version=VERSION,
    install_requires=[
        f"retrysafe=={VERSION}",
        # moto's server runs the synthesized app. Its own moto range, so retrysafe-cdk never needs moto
        # and the sandbox caps nobody's moto: the few moto behaviours it builds on are listed in
        # retrysafe_sandbox/moto_adapter.py, each with its own test (tests/sandbox/test_moto_adapter.py),
        # which is what a moto upgrade has to pass.
        "moto[server,dynamodb,dynamodbstreams,sqs,sns,events,s3,secretsmanager,ssm]>=5.2.5,<6",
        "joserfc>=1.0,<2",  # local JWTs for the emulated JWT and Cognito authorizers
    ],
)
