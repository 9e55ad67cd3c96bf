"""Data: readers for rating files, the embedded data set, fetching, filters and splits."""

from dptune.data._dataset import Dataset, dataset_stats, kcore_filter, load_dataset
from dptune.data._fetch import KNOWN_DATASETS, fetch
from dptune.data._options import COLUMNS, parse_columns
from dptune.data._readers import FORMATS, read_ratings
from dptune.data._split import (
    FOLD_METHODS,
    SPLIT_METHODS,
    HoldOut,
    cv_fold_labels,
    kfold_labels,
    leave_one_out,
    leave_one_out_random,
    random_holdout,
    split_holdout,
    temporal_holdout,
)

__all__ = [
    "COLUMNS",
    "FORMATS",
    "KNOWN_DATASETS",
    "Dataset",
    "dataset_stats",
    "fetch",
    "kcore_filter",
    "load_dataset",
    "parse_columns",
    "read_ratings",
    "FOLD_METHODS",
    "HoldOut",
    "cv_fold_labels",
    "kfold_labels",
    "SPLIT_METHODS",
    "leave_one_out",
    "leave_one_out_random",
    "random_holdout",
    "split_holdout",
    "temporal_holdout",
]
