"""``python -m xlat`` runs the command line."""

import sys

from xlat.cli import main

sys.exit(main())
