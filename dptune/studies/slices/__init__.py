"""The user-slice study: metrics, miss rate and DP per log-scaled slice of a result store's
users (history length, popularity of what they hold out). Which file holds what:

- ``bins.py``: the log-scaled bins, the users' features and their slices.
- ``dp.py``: the main analysis's pairs, DP and metrics per slice.
- ``figure.py`` and ``report.py``: the figure and the Markdown report.
- ``study.py``: :func:`~dptune.studies.slices.study.run_slices_study`, which checks every input,
  ties them together and writes the files.

Import names from these modules; this package re-exports nothing.
"""
