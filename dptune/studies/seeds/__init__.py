"""The split-seed study: how much a recommender's accuracy depends on the seed that splits the
data, for a random hold-out and for k-fold cross-validation. Which file holds what:

- ``settings.py``: the ``[seeds]`` table and its overrides, validated before any work; the
  seeds; the default configuration of every algorithm.
- ``runs.py``: one seed's hold-out and folds, trained and evaluated (cached per seed), and the
  grid part's per-seed result stores.
- ``stats.py``: percent of the mean per seed, the hold-out vs CV test, Kendall's tau between
  seeds' rankings, the grid part's stability.
- ``figure.py`` and ``report.py``: the figure and the Markdown report.
- ``study.py``: :func:`~dptune.studies.seeds.study.run_seeds_study`, which ties them together
  and writes the files.

Import names from these modules; this package re-exports nothing.
"""
