"""The methods paragraphs of a report: how its numbers were made, in prose, ready for a paper.

A researcher who uses the verdict in a paper has to say how it was computed: the data and its
split, the grids, the metrics, how DP is defined and scaled, what the intervals and the
"significantly" rest on, the noise floor and the software. :func:`methods_of` writes that from
the analysis result alone (its manifest, options and tables, the same sources as the settings
table), saying only what this analysis ran: no interval sentence without a bootstrap, no noise
floor sentence without a floor, no split for outside data. :class:`Methods` renders itself as
Markdown (``methods.md``, citations as "(Anelli et al., 2019)" and a reference list) and as
LaTeX (``methods.tex``, ``\\cite{...}`` keys of ``references.bib``, :data:`REFERENCES`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dptune.report._format import and_list, pct, shown_algorithm, shown_metric
from dptune.report._sections import noise_runs, pair_seeds_run
from dptune.report._table import md_names, tex_escape
from dptune.vocab import RULE_MARGIN

__all__ = ["Methods", "methods_of", "REFERENCES"]

#: Citation key -> (how the Markdown text cites it, its reference line, its BibTeX entry).
REFERENCES: dict[str, tuple[str, str, str]] = {
    "anelli2019": (
        "Anelli et al., 2019",
        "Vito Walter Anelli, Tommaso Di Noia, Eugenio Di Sciascio, Claudio Pomo and Azzurra "
        "Ragone. 2019. On the discriminative power of hyper-parameters in cross-validation and "
        "how to choose them. In Proceedings of the 13th ACM Conference on Recommender Systems "
        "(RecSys '19). https://doi.org/10.1145/3298689.3347010",
        "@inproceedings{anelli2019,\n"
        "  author = {Anelli, Vito Walter and Di Noia, Tommaso and Di Sciascio, Eugenio and "
        "Pomo, Claudio and Ragone, Azzurra},\n"
        "  title = {On the Discriminative Power of Hyper-parameters in Cross-Validation and How "
        "to Choose Them},\n"
        "  booktitle = {Proceedings of the 13th ACM Conference on Recommender Systems},\n"
        "  series = {RecSys '19},\n"
        "  year = {2019},\n"
        "  publisher = {ACM},\n"
        "  doi = {10.1145/3298689.3347010}\n"
        "}",
    ),
    "sakai2006": (
        "Sakai, 2006",
        "Tetsuya Sakai. 2006. Evaluating evaluation metrics based on the bootstrap. In "
        "Proceedings of the 29th Annual International ACM SIGIR Conference on Research and "
        "Development in Information Retrieval (SIGIR '06), 525-532.",
        "@inproceedings{sakai2006,\n"
        "  author = {Sakai, Tetsuya},\n"
        "  title = {Evaluating Evaluation Metrics Based on the Bootstrap},\n"
        "  booktitle = {Proceedings of the 29th Annual International ACM SIGIR Conference on "
        "Research and Development in Information Retrieval},\n"
        "  series = {SIGIR '06},\n"
        "  year = {2006},\n"
        "  pages = {525--532},\n"
        "  publisher = {ACM}\n"
        "}",
    ),
    "valcarce2018": (
        "Valcarce et al., 2018",
        "Daniel Valcarce, Alejandro Bellogín, Javier Parapar and Pablo Castells. 2018. On the "
        "robustness and discriminative power of information retrieval metrics for top-N "
        "recommendation. In Proceedings of the 12th ACM Conference on Recommender Systems "
        "(RecSys '18), 260-268.",
        "@inproceedings{valcarce2018,\n"
        "  author = {Valcarce, Daniel and Bellog{\\'i}n, Alejandro and Parapar, Javier and "
        "Castells, Pablo},\n"
        "  title = {On the Robustness and Discriminative Power of Information Retrieval "
        "Metrics for Top-N Recommendation},\n"
        "  booktitle = {Proceedings of the 12th ACM Conference on Recommender Systems},\n"
        "  series = {RecSys '18},\n"
        "  year = {2018},\n"
        "  pages = {260--268},\n"
        "  publisher = {ACM}\n"
        "}",
    ),
    "romano2005": (
        "Romano and Wolf, 2005",
        "Joseph P. Romano and Michael Wolf. 2005. Stepwise multiple testing as formalized data "
        "snooping. Econometrica 73, 4, 1237-1282.",
        "@article{romano2005,\n"
        "  author = {Romano, Joseph P. and Wolf, Michael},\n"
        "  title = {Stepwise Multiple Testing as Formalized Data Snooping},\n"
        "  journal = {Econometrica},\n"
        "  volume = {73},\n"
        "  number = {4},\n"
        "  pages = {1237--1282},\n"
        "  year = {2005}\n"
        "}",
    ),
    "vargas2011": (
        "Vargas and Castells, 2011",
        "Saúl Vargas and Pablo Castells. 2011. Rank and relevance in novelty and diversity "
        "metrics for recommender systems. In Proceedings of the 5th ACM Conference on "
        "Recommender Systems (RecSys '11), 109-116.",
        "@inproceedings{vargas2011,\n"
        "  author = {Vargas, Sa{\\'u}l and Castells, Pablo},\n"
        "  title = {Rank and Relevance in Novelty and Diversity Metrics for Recommender "
        "Systems},\n"
        "  booktitle = {Proceedings of the 5th ACM Conference on Recommender Systems},\n"
        "  series = {RecSys '11},\n"
        "  year = {2011},\n"
        "  pages = {109--116},\n"
        "  publisher = {ACM}\n"
        "}",
    ),
    "hutter2014": (
        "Hutter et al., 2014",
        "Frank Hutter, Holger H. Hoos and Kevin Leyton-Brown. 2014. An efficient approach for "
        "assessing hyperparameter importance. In Proceedings of the 31st International "
        "Conference on Machine Learning (ICML 2014), PMLR 32, 754-762.",
        "@inproceedings{hutter2014,\n"
        "  author = {Hutter, Frank and Hoos, Holger H. and Leyton-Brown, Kevin},\n"
        "  title = {An Efficient Approach for Assessing Hyperparameter Importance},\n"
        "  booktitle = {Proceedings of the 31st International Conference on Machine Learning},\n"
        "  series = {PMLR},\n"
        "  volume = {32},\n"
        "  pages = {754--762},\n"
        "  year = {2014}\n"
        "}",
    ),
    "watanabe2023": (
        "Watanabe et al., 2023",
        "Shuhei Watanabe, Archit Bansal and Frank Hutter. 2023. PED-ANOVA: Efficiently "
        "quantifying hyperparameter importance in arbitrary subspaces. In Proceedings of the "
        "32nd International Joint Conference on Artificial Intelligence (IJCAI 2023).",
        "@inproceedings{watanabe2023,\n"
        "  author = {Watanabe, Shuhei and Bansal, Archit and Hutter, Frank},\n"
        "  title = {{PED-ANOVA}: Efficiently Quantifying Hyperparameter Importance in "
        "Arbitrary Subspaces},\n"
        "  booktitle = {Proceedings of the 32nd International Joint Conference on Artificial "
        "Intelligence},\n"
        "  series = {IJCAI '23},\n"
        "  year = {2023}\n"
        "}",
    ),
    "akiba2019": (
        "Akiba et al., 2019",
        "Takuya Akiba, Shotaro Sano, Toshihiko Yanase, Takeru Ohta and Masanori Koyama. 2019. "
        "Optuna: A next-generation hyperparameter optimization framework. In Proceedings of the "
        "25th ACM SIGKDD International Conference on Knowledge Discovery & Data Mining (KDD "
        "'19), 2623-2631.",
        "@inproceedings{akiba2019,\n"
        "  author = {Akiba, Takuya and Sano, Shotaro and Yanase, Toshihiko and Ohta, Takeru "
        "and Koyama, Masanori},\n"
        "  title = {Optuna: A Next-generation Hyperparameter Optimization Framework},\n"
        "  booktitle = {Proceedings of the 25th ACM SIGKDD International Conference on "
        "Knowledge Discovery \\& Data Mining},\n"
        "  series = {KDD '19},\n"
        "  year = {2019},\n"
        "  pages = {2623--2631},\n"
        "  publisher = {ACM}\n"
        "}",
    ),
}

#: A citation inside a sentence of :class:`Methods`: ``[@key]`` or ``[@key; @key]``.
_CITE = re.compile(r"\[@([a-z0-9]+(?:; @[a-z0-9]+)*)\]")

_SPLITS = {
    "temporal": "each user's interactions are ordered by time and the first {ratio} of them "
                "form the training part, the rest the test split (a temporal hold-out)",
    "random": "a random {ratio} of each user's interactions form the training part, the rest "
              "the test split (a random hold-out)",
    "leave-one-out": "each user's last interaction in time is held out as the test split "
                     "(leave-one-out)",
    "leave-one-out-random": "one random interaction of each user is held out as the test "
                            "split (leave-one-out)",
}
_FOLDS = {
    "user_stratified": "each user's training interactions dealt evenly over the folds",
    "random": "the training interactions assigned to the folds at random",
    "user_temporal": "each user's training interactions cut by time into consecutive parts",
}


@dataclass(frozen=True)
class Methods:
    """The methods text of one analysis: ``paragraphs`` of plain text in which a citation is
    written ``[@key]`` (a key of :data:`REFERENCES`) and a name from the data is a span
    (:func:`dptune.report._format.name_span`), rendered per format: escaped in Markdown,
    as written in LaTeX (:func:`dptune.report._table.tex_escape` escapes every character)."""

    paragraphs: tuple[str, ...]

    @property
    def cited(self) -> list[str]:
        """The keys cited, in order of first citation."""
        keys = [k for p in self.paragraphs for group in _CITE.findall(p) for k in _keys(group)]
        return list(dict.fromkeys(keys))

    def to_markdown(self) -> str:
        """methods.md: a heading, the paragraphs with citations as "(Author, year)", and the
        references they cite."""
        def cite(m: re.Match[str]) -> str:
            return "(" + "; ".join(REFERENCES[k][0] for k in _keys(m.group(1))) + ")"

        parts = ["# Methods", "",
                 "How the numbers of this report were computed, as text for a paper's methods "
                 "section (`methods.tex` is the same text for LaTeX, its citations in "
                 "`references.bib`).", ""]
        for p in self.paragraphs:
            parts += [_CITE.sub(cite, p), ""]
        parts += ["## References", ""]
        parts += [f"- {REFERENCES[k][1]}" for k in sorted(self.cited)]
        return md_names("\n".join(parts)) + "\n"

    def to_latex(self) -> str:
        """methods.tex: the paragraphs as LaTeX (special characters escaped), each citation a
        ``\\cite`` of :meth:`to_bibtex`'s keys."""
        def paragraph(text: str) -> str:
            out, last = [], 0
            for m in _CITE.finditer(text):
                out.append(tex_escape(text[last:m.start()]))
                out.append("\\cite{" + ",".join(_keys(m.group(1))) + "}")
                last = m.end()
            out.append(tex_escape(text[last:]))
            return "".join(out).replace(" \\cite", "~\\cite")

        head = ("% Generated by dptune.report: how the numbers of this report were computed. "
                "Citations: references.bib.")
        return "\n\n".join([head, *(paragraph(p) for p in self.paragraphs)]) + "\n"

    def to_bibtex(self) -> str:
        """references.bib: the BibTeX entries of the works cited."""
        return "\n\n".join(REFERENCES[k][2] for k in self.cited) + "\n"


def _keys(group: str) -> list[str]:
    """The keys of one citation's inside, ``@a; @b`` (a match of :data:`_CITE`)."""
    return [k.lstrip("@") for k in group.split("; ")]


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _number(value: object) -> float | None:
    """``value`` as a finite float, or None (a manifest written by hand may hold None)."""
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if x == x and abs(x) != float("inf") else None


def _data_paragraph(manifest: Mapping[str, Any]) -> str:
    """The data, its split and the evaluation protocol, from a sweep's manifest (what it does
    not record is not said)."""
    ds, sp, ev = manifest["dataset"], manifest["split"], manifest["evaluation"]
    counts = [_number(ds.get(k)) for k in ("users", "items", "ratings")]
    stats = ""
    if all(counts):
        stats = " (" + ", ".join(_count(int(n), w) for n, w in  # type: ignore[arg-type]
                                 zip(counts, ("user", "item", "interaction"), strict=True)) + ")"
    method, ratio = str(sp.get("method")), _number(sp.get("train_ratio"))
    if method in _SPLITS and (ratio is not None or "{ratio}" not in _SPLITS[method]):
        split = "split per user: " + _SPLITS[method].format(ratio=pct(ratio or 0.0))
    else:
        split = f"split into training part and test split by the method {method!r}"
    dropped = int(_number(sp.get("dropped_users")) or 0)
    least = int(_number(sp.get("min_user_interactions")) or 0)
    drop = (f"; users with fewer than {least} interactions are left out "
            f"({'none here' if not dropped else _count(dropped, 'user')})" if least > 1 else "")
    k = int(sp["folds"])
    rest = "the other fold" if k == 2 else f"the other {k - 1} folds"
    folds = _FOLDS.get(str(sp.get("fold_method")), f"fold method {sp.get('fold_method')!r}")
    threshold = _number(ev.get("relevance_threshold"))
    relevant = ("every held-out interaction is relevant (implicit feedback)"
                if ev.get("implicit_feedback") else
                f"an item is relevant when its rating is at least {threshold:g}"
                if threshold is not None else f"relevance: {ev.get('relevance_rule')}")
    protocol = str(ev.get("protocol", ""))
    candidates = ("every item not in the user's training data is a candidate (all unrated "
                  "items)" if protocol.startswith("all unrated items") else
                  f"the candidate items are: {protocol}")
    seed = sp.get("split_seed")
    return ("The protocol is that of a study of the discriminative power of metrics under "
            f"cross-validation [@anelli2019]. The data set {ds['name']}{stats} is {split}"
            f"{drop}. The training part is divided into {k} folds for cross-validation "
            f"({folds}); every configuration is trained on {rest} and evaluated on the "
            f"remaining one, in turn for each fold. In evaluation, {relevant}, {candidates}, "
            "and users with no relevant held-out item are not evaluated."
            + ("" if seed is None else f" The split seed is {seed}."))


def _grid_paragraph(result: Any) -> str:
    manifest = result.manifest
    counts = result.configuration_counts
    algs = [a for a in manifest.get("algorithms", ()) if "name" in a]
    named = [f"{shown_algorithm(a['name'])} ({_count(int(a.get('n_configs', counts.get(a['name'], 0))), 'configuration')})"
             for a in algs]
    ev = manifest["evaluation"]
    metrics = [shown_metric(m) for m in ev["metrics"]]
    novelty = [m for m in ev["metrics"] if m in ("efd", "epc")]
    cite = " [@vargas2011]" if novelty else ""
    text = (f"We sweep the hyperparameter grids of {and_list(named)} and measure "
            f"{and_list(metrics)}{cite} at N = {and_list([str(c) for c in ev['cutoffs']])} for every "
            "evaluated user of every fold.")
    sample = result.dp.grid_sample
    if sample is not None and not sample.empty:
        runs = [f"{int(r['units'])} of the {int(r['units_total']):,} training runs of "
                f"{shown_algorithm(str(r['algorithm']))} per fold ({int(r['configs']):,} of its "
                f"{int(r['configs_total']):,} configurations)"
                for r in sample.to_dict("records")]
        text += (f" Of a grid this large a sample is run: {and_list(runs)}; a training run serves "
                 "every configuration it holds at once (such as its iteration snapshots). Each "
                 "DP of a sampled grid weights its pairs by the share of the full grid's pairs "
                 "they stand for, so it estimates the full grid's DP, and its interval also "
                 "resamples the training runs.")
    return text


def _dp_paragraph(result: Any) -> str:
    o = result.options
    cap, value_cap = int(o.pairs), int(o.scope_value_pairs)
    test = o.paired_test.label
    return ("The discriminative power (DP) of a metric@N [@sakai2006; @valcarce2018; "
            "@anelli2019] is measured on pairs of configurations of one algorithm: all its "
            f"pairs when there are at most {cap:,}, otherwise a seeded uniform sample of "
            f"{cap:,}{'' if o.seed is None else f' (seed {o.seed})'}; a scope of the pairs that differ in one hyperparameter "
            f"alone, or that share one value of one, takes at most {value_cap:,}. For each "
            f"pair and fold, a {test} over the fold's users gives a p-value; the p-values of "
            "each fold are sorted in decreasing order and averaged over the folds, and the "
            "DP of that study is the sum of this curve. We report DP per 25 pairs, 25 "
            "times the mean p-value, which is their DP when 25 pairs are compared and lets "
            "scopes with different numbers of pairs be compared; it lies between 0 and 25, "
            "and lower is more discriminative.")


def _inference_paragraph(result: Any) -> str:
    o = result.options
    b = int(o.bootstrap)
    if b <= 0 or not o.paired_test.interval:
        why = ("no bootstrap was run" if b <= 0 else
               f"the bootstrap resamples t-tests and the test here is the {o.paired_test.label}")
        return (f"DP has no interval and no difference between metrics is claimed: {why}. "
                "Where several metrics of a family are offered, the lowest DP alone does not "
                "make one the better choice.")
    families = "; ".join(f"{name}: {and_list([shown_metric(m) for m in ms])}"
                         for name, ms in result.metric_families.groups)
    seeds = ""
    run = pair_seeds_run(result.dp.table)  # as the settings row reads it
    if int(o.stability) > 1 and run:
        ran = sorted(set(run.values()))
        said = (f"each of {ran[0]} pair seeds" if len(ran) == 1 else
                f"each of the {ran[0]} to {ran[-1]} pair seeds run (column repeats of dp.csv)")
        seeds = (f" Where the pairs are a sample, a claim must hold under {said}, so that it "
                 "does not rest on one draw of pairs." if ran[-1] > 1 else "")
    dominance = ("" if result.dominance is None or result.dominance.empty else
                 " A hyperparameter is called dominant when the DP of the pairs that differ in "
                 "it alone is significantly lower than that of every other hyperparameter, "
                 "with the same error control.")
    return (f"Each DP has a 95% interval from {b:,} bootstrap replicates that resample each "
            f"fold's users in {result.bootstrap_groups} random groups (and the pairs, when "
            "they are a sample), the same draws for every metric, so that the metrics' "
            "replicates are paired. A metric is called significantly less discriminative "
            "than the metric of lowest DP in its family by a bootstrap max-t test, "
            f"stepped down [@romano2005], at a family-wise error rate of {o.alpha:g} within "
            f"each family of metrics ({families}); a claim rests on at least {int(o.min_pairs)} "
            f"pairs.{seeds} Metrics that are not significantly less discriminative than the "
            f"lowest DP are reported as equal choices.{dominance}")


def _floor_paragraph(result: Any) -> str:
    floor = result.noise
    runs = noise_runs(floor).values()  # (configurations, seeds), as the settings row reads them
    seeds = sorted({k for _, k in runs})
    primary = shown_metric(*result.primary)
    how = (f"{seeds[0]} seeds" if len(seeds) == 1 else
           f"{seeds[0]} to {seeds[-1]} seeds" if seeds else "several seeds")
    most = max((c for c, _ in runs), default=1)
    which = "the best configuration" if most <= 1 else f"the {most} best configurations"
    verb = "is" if which == "the best configuration" else "are"
    versus = floor.versus_dp
    tested = (versus is not None and "rule" in versus and bool((versus["rule"] == RULE_MARGIN).any()))
    rule = ("A metric is clearly below its floor when the floor exceeds its DP by more than "
            "both intervals' half-widths combined (a one-sided test at about 2.5% for each "
            "metric@N); a metric that is not does not separate configurations better than "
            "re-training does." if tested else
            "Without an interval of DP, each DP is compared with its floor as it is, with no "
            "test.")
    return (f"As an A/A noise floor, {which} by validation {primary} of each stochastic "
            f"algorithm {verb} trained again with {how} on every fold; the DP of these pairs, "
            f"which differ in the seed alone, is what re-training noise gives. {rule}")


def _downstream_sentence(result: Any) -> str:
    if not result.test_split or result.downstream is None:
        return ""
    return (" Whether the choice of metric matters is judged on the test split, which no fold "
            "and no selection uses: the configurations the metrics of a family select on the "
            "validation folds are compared by a paired t-test over the test users.")


def _software_paragraph(result: Any) -> str:
    versions = dict((result.manifest or {}).get("versions", {}))
    own = versions.pop("dptune", None)
    used = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    text = ("The analysis was run with dptune" + (f" {own}" if own else "")
            + (f" ({used})" if used else "") + ".")
    if result.importance is not None and not result.importance.empty:
        text = ("Hyperparameter importance is estimated with fANOVA [@hutter2014] and "
                "PED-ANOVA [@watanabe2023] as implemented in Optuna [@akiba2019]. " + text)
    return text


def _outside_paragraph(result: Any) -> str:
    manifest = result.manifest
    source = str((manifest.get("dataset") or {}).get("source", "a per-user table"))
    what = "evaluated runs" if manifest.get("source") == "runs" else "a per-user table"
    counts = result.configuration_counts
    named = [f"{shown_algorithm(a)} ({_count(n, 'configuration')})" for a, n in counts.items()]
    folds = [str(f) for f in manifest.get("folds", ()) if str(f) != "test"]
    return (f"The per-user metric values were read from {what} ({source.rsplit('/', 1)[-1]}): "
            f"{and_list(named) if named else 'its systems'}"
            + (f", over {_count(len(folds), 'fold')}" if folds else "") + ".")


def methods_of(result: Any) -> Methods | None:
    """The methods text of an analysis result (:class:`~dptune.analysis.AnalysisResult`), or
    None when it has no DP table to describe. Every number comes from the result: its
    manifest (data, split, evaluation, grids, versions), its options (pairs, test, bootstrap,
    alpha) and its tables (grid sample, noise floor, importance, downstream)."""
    if result is None or result.dp.table is None or result.dp.table.empty:
        return None
    manifest = result.manifest or {}
    if all(k in manifest for k in ("dataset", "split", "evaluation")):  # a sweep's
        head = [_data_paragraph(manifest), _grid_paragraph(result)]
    elif result.outside:
        head = [_outside_paragraph(result)]
    else:  # a result built by hand: nothing recorded about its data
        head = []
    inference = _inference_paragraph(result) + _downstream_sentence(result)
    floor = ([_floor_paragraph(result)] if result.noise is not None and not result.noise.floor.empty
             else [])
    return Methods(tuple([*head, _dp_paragraph(result), inference, *floor,
                          _software_paragraph(result)]))
