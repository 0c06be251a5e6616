"""`python -m tools ...` runs the `warpsplat` command from a checkout."""

import sys

from .cli import main

sys.exit(main())
