"""Performance benchmark (``python -m dptune.bench``); not imported by the rest of dptune."""

