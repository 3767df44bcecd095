"""``python -m gdln``."""

import sys

from gdln.cli import main

sys.exit(main())
