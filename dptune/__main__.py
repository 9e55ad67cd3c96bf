"""``python -m dptune``: the ``dptune`` command (as ``python -m dptune.cli``)."""

import sys

from dptune.cli import main

sys.exit(main())
