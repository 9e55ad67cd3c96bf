"""``python -m dptune.bench``: the performance benchmark (see :mod:`dptune.bench`)."""

import sys

from dptune.bench._main import bench_main

sys.exit(bench_main())
