"""The report's settings table: every setting of the experiment and the analysis, as text rows.

A DP or a metric value means little without the relevance rule and the metric variant behind
it (the paper's "above 4" is ambiguous), so
:func:`settings_rows` always lists those two first ("not recorded" when missing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dptune.report._format import fmt_setting

__all__ = ["PAIRS_SETTING", "VALUE_PAIRS_SETTING", "settings_rows", "flatten", "find_setting"]

#: Settings-table rows of the two pair caps (the report's "Pairs" section reads them back).
PAIRS_SETTING = "Pairs, scope all (P)"
VALUE_PAIRS_SETTING = "Pairs, each hyperparameter-value scope"

_THRESHOLD_KEYS = ("relevance_threshold", "threshold", "relevance", "min_relevant_rating")
_VARIANT_KEYS = ("metric_variant", "variant", "relevance_aware", "novelty_variant")


def flatten(settings: Mapping[str, object], prefix: str = "") -> list[tuple[str, object]]:
    """Flatten nested mappings to ``(dotted.key, value)`` pairs in insertion order."""
    out: list[tuple[str, object]] = []
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out += flatten(value, f"{name}.")
        else:
            out.append((name, value))
    return out


def find_setting(flat: list[tuple[str, object]], keys: Sequence[str]) -> tuple[str, object] | None:
    """First flattened setting whose last key component is one of ``keys`` (in ``keys`` order)."""
    for want in keys:
        for name, value in flat:
            if name.rsplit(".", 1)[-1].lower().replace("-", "_").replace(" ", "_") == want:
                return name, value
    return None


def settings_rows(settings: Mapping[str, object] | None) -> list[tuple[str, str]]:
    """(setting, value) rows for the report's settings table.

    The relevance threshold and the metric variant come first and are always present ("not
    recorded" when ``settings`` lacks them): no report leaves them out. Nested
    mappings (e.g. package versions) are flattened to dotted keys; the rest keeps dict order.
    """
    flat = flatten(settings or {})
    rows: list[tuple[str, str]] = []
    used: set[str] = set()
    thr = find_setting(flat, _THRESHOLD_KEYS)
    if thr is None:
        rows.append(("Relevance threshold", "not recorded"))
    else:
        used.add(thr[0])
        value = thr[1]
        text = (
            f"rating >= {fmt_setting(value)} is relevant"
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else fmt_setting(value)
        )
        rows.append(("Relevance threshold", text))
    var = find_setting(flat, _VARIANT_KEYS)
    if var is None:
        rows.append(("Metric variant", "not recorded"))
    else:
        used.add(var[0])
        value = var[1]
        if isinstance(value, bool):
            text = (
                "relevance-aware (EPC/EFD count relevant recommended items only)"
                if value
                else "relevance-unaware (EPC/EFD with rel = 1)"
            )
        else:
            text = fmt_setting(value)
        rows.append(("Metric variant", text))
    for name, value in flat:
        if name not in used:
            rows.append((name.replace("_", " "), fmt_setting(value)))
    return rows
