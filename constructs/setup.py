"""retrysafe-cdk at retrysafe's version, requiring exactly that retrysafe.

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
        # The oldest aws-cdk-lib is synthesized in CI (`make synth-oldest`); 2.269.0 is the first that
        # accepts the fine-grained acknowledgement ids the constructs use. They acknowledge cdk-nag
        # findings through aws-cdk-lib's own Validations API, so cdk-nag itself is optional.
        "aws-cdk-lib>=2.269.0,<3",
        "constructs>=10,<11",
    ],
    extras_require={
        # cdk-nag 3 (a validation plugin: Validations.of(app).add_plugins(AwsSolutionsChecks(app))).
        "nag": ["cdk-nag>=3,<4"],
    },
)
