"""Former home of every model (split into ``_base``, ``_knn``, ``_bpr``, ``_cornac``,
``_implicit``, ``_adapters`` and ``_families``); re-exports the old names so that modules written
against ``dptune.models._models`` keep importing. New code imports from the specific module."""

from dptune.models._adapters import CornacFamily
from dptune.models._base import Family, Recommender, _as_users, _binary_csr
from dptune.models._bpr import BPRMF, _bpr_epoch, _epoch_state
from dptune.models._cornac import CornacModel, _cornac_class
from dptune.models._families import FAMILY_TYPES, BPRFamily, KNNFamily, get_family
from dptune.models._knn import ItemKNN, UserKNN, _cosine_topk, _GrowingK, _KView

__all__ = [
    "Recommender", "UserKNN", "ItemKNN", "BPRMF", "CornacModel", "Family", "KNNFamily",
    "BPRFamily", "CornacFamily", "get_family", "FAMILY_TYPES", "_as_users", "_binary_csr",
    "_bpr_epoch", "_epoch_state", "_cornac_class", "_cosine_topk", "_GrowingK", "_KView",
]
