"""The report's settings table: every setting of the experiment and the analysis, as text rows.

A DP or a metric value means little without the relevance rule and the metric variant behind
it (the paper's "above 4" is ambiguous), so
:func:`settings_rows` always lists those two first ("not recorded" when missing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dptune.report._format import fmt_setting
from dptune.vocab import fold_key

__all__ = ["PAIRS_SETTING", "VALUE_PAIRS_SETTING", "CLAIMS_SETTING", "settings_rows", "flatten",
           "find_setting", "outside_settings"]

#: Settings-table rows of the two pair caps (the report's "Pairs" section reads them back): the
#: most pairs a scope compares, not its P (a scope with fewer possible pairs compares them all).
PAIRS_SETTING = "Pairs cap, scope all"
VALUE_PAIRS_SETTING = "Pairs cap, each hyperparameter-value scope"
#: The settings-table row of the significance claims (how they are tested, and the stability
#: check under the pair seed as asked for and as run).
CLAIMS_SETTING = "Significance claims"

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


#: The settings row that says how many users the pairs of an incomplete table compare.
USERS_SETTING = "Users compared"


def incomplete_text(records: Sequence[Mapping[str, Any]], shown: int = 5) -> str:
    """The :data:`USERS_SETTING` row of an outside table in which some configuration lacks
    values (the manifest's ``incomplete`` records, one per algorithm, fold and metric@N): per
    algorithm and fold, the fewest users scope ``all`` compares and the configuration with the
    fewest values; ``""`` for a complete table. At most ``shown`` folds are named."""
    worst: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in records:
        key = (str(r["algorithm"]), str(r["fold"]))
        if key not in worst or r["complete"] < worst[key]["complete"]:
            worst[key] = r
    if not worst:
        return ""
    parts = []
    for (alg, fold), r in list(worst.items())[:shown]:
        who = r.get("system", f"configuration {r['fewest']}")
        parts.append(f"{alg}, fold {fold}: {r['complete']} of {r['users']} users ({who} has "
                     f"values for {r['fewest_users']})")
    more = len(worst) - shown
    return ("not every configuration has a value for every user, and every pair of a scope is "
            "compared on the users for whom every configuration of the scope has one; in scope "
            "all: " + "; ".join(parts) + (f"; and {more} more folds" if more > 0 else ""))


def outside_settings(manifest: Mapping[str, Any], options: Any,
                     configurations: pd.DataFrame | None,
                     sources: Mapping[str, object] | None = None) -> dict[str, object]:
    """The settings table of outside data (a per-user table, evaluated TREC runs), from what
    its analysis result records: ``sources`` (what was read; default: the data's source as its
    manifest records it) first, the algorithms and their number of configurations, which
    configuration id is which system when configurations are named (the ids of ``pairs.csv``
    and ``pvalues.parquet``), the folds and the analysis options. Outside data has no
    experiment, so the settings of a sweep's report (split, evaluation) do not apply."""
    if sources is None:
        label = "Runs" if manifest.get("source") == "runs" else "Per-user table"
        sources = {label: str((manifest.get("dataset") or {}).get("source", "not recorded"))}
    algorithms = [a["name"] for a in manifest.get("algorithms", ())]
    named: dict[str, pd.DataFrame] = {}
    for alg in algorithms:
        rows = (configurations[configurations["algorithm"] == alg]
                if configurations is not None else pd.DataFrame())
        named[alg] = rows.dropna(axis=1, how="all")
    systems = "; ".join(f"{a}: " + ", ".join(f"{int(r.config_id)} = {r.system}"
                                             for r in c.itertuples(index=False))
                        for a, c in named.items() if "system" in c.columns)
    folds = sorted((str(f) for f in manifest.get("folds", ())), key=fold_key)
    validation = [f for f in folds if f != "test"]  # what the DP is averaged over
    test = "; and the test split (test), which the DP does not use" if "test" in folds else ""
    incomplete = incomplete_text(manifest.get("incomplete") or ())
    return {
        **sources,
        "Algorithms": ", ".join(f"{a} ({len(c)} configurations)" for a, c in named.items()),
        **({"Configurations": systems} if systems else {}),
        "Folds": f"{len(validation)} validation ({', '.join(validation)}){test}",
        **({USERS_SETTING: incomplete} if incomplete else {}),
        PAIRS_SETTING: options.pairs,
        VALUE_PAIRS_SETTING: options.scope_value_pairs,
        "Pair-sampling seed": options.seed,
        "Statistical test": options.test,
        "Alpha": options.alpha,
        "Bootstrap": options.bootstrap or "off",
        "Noise floor": "off (needs retraining, which outside data cannot do)",
    }
