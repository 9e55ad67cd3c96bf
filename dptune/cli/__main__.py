"""``python -m dptune.cli``: the ``dptune`` command."""

import sys

from dptune.cli import main

sys.exit(main())
