"""Models: the recommenders a sweep trains and the families that group them into units.

Built in: ``UserKNN`` / ``ItemKNN`` (:mod:`._knn`), ``BPRMF`` (:mod:`._bpr`). Adapters:
any cornac model (:mod:`._cornac`), the ``implicit`` library (:mod:`._implicit`) and any Python
model with ``fit(X)`` and ``score(users)`` (:mod:`._adapters`, :func:`register`). Every family
says whether its model is ``stochastic`` (only stochastic models get a noise floor).
"""

from dptune.models._adapters import (
    CornacFamily,
    ImplicitFamily,
    PythonFamily,
    SignatureFamily,
    register,
)
from dptune.models._base import Family, Recommender
from dptune.models._bpr import BPRMF
from dptune.models._cornac import DETERMINISTIC_CORNAC, CornacModel
from dptune.models._families import (
    FAMILY_TYPES,
    BPRFamily,
    KNNFamily,
    get_family,
    is_known_type,
    is_stochastic,
)
from dptune.models._implicit import IMPLICIT_MODELS, ImplicitModel
from dptune.models._knn import ItemKNN, UserKNN

__all__ = [
    "Recommender",
    "UserKNN",
    "ItemKNN",
    "BPRMF",
    "CornacModel",
    "ImplicitModel",
    "Family",
    "KNNFamily",
    "BPRFamily",
    "SignatureFamily",
    "CornacFamily",
    "ImplicitFamily",
    "PythonFamily",
    "get_family",
    "is_known_type",
    "is_stochastic",
    "register",
    "FAMILY_TYPES",
    "DETERMINISTIC_CORNAC",
    "IMPLICIT_MODELS",
]
