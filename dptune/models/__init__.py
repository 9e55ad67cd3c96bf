"""Models: the recommenders a sweep trains (KNN, BPR-MF, cornac adapter) and their families."""

from dptune.models._models import (
    BPRMF,
    FAMILY_TYPES,
    BPRFamily,
    CornacFamily,
    CornacModel,
    Family,
    ItemKNN,
    KNNFamily,
    Recommender,
    UserKNN,
    get_family,
)

__all__ = [
    "Recommender",
    "UserKNN",
    "ItemKNN",
    "BPRMF",
    "CornacModel",
    "Family",
    "KNNFamily",
    "BPRFamily",
    "CornacFamily",
    "get_family",
    "FAMILY_TYPES",
]
