"""The flags of the command line, defined once: their names, types, help and defaults.

The same thing has the same flag in every command (``--results DIR``, ``--reports DIR``,
``--jobs N``, ``--storage URL``, ``--no-progress``), and a flag means one thing everywhere
(``--out FILE`` is always a file to write). A former name either still works and warns once
(:func:`deprecated_flag`: ``seeds --cache``) or is refused with one line naming the new flag
(:func:`removed_flag`: ``seeds --out`` and ``slices --out``, which named a folder while every
other ``--out`` names a file). Every analysis flag is one row of
:data:`ANALYSIS_FLAGS`, mapped onto the field of the analysis options it sets: adding a flag is
adding a row. Values are checked while parsing (type and range), so a bad flag is one line and
exit code 2 before anything is read or computed.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptune.errors import input_error
from dptune.vocab import CORRECTIONS, RENAMED_OPTIONS, SEED_RANGE, TESTS


# --------------------------------------------------------------------------- value types
def int_at_least(lo: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``lo``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be an integer >= {lo}, got {value}")
        return value
    return parse


def int_between(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi``."""
    def parse(text: str) -> int:
        value = int_at_least(lo)(text)
        if value > hi:
            raise argparse.ArgumentTypeError(f"must be an integer from {lo} to {hi:,}, got {value:,}")
        return value
    return parse


#: An argparse type: a seed, in :data:`dptune.vocab.SEED_RANGE` (refused with the flag's name
#: when the arguments are read, not after a sweep that the analysis's seed check follows).
seed_value = int_between(*SEED_RANGE)


def table_label(text: str) -> str:
    """An argparse type: what starts the LaTeX labels of a report's tables (``tab:<it>:table3``):
    ASCII letters, digits, ``-``, ``.`` and ``:``, at most 100 characters, as a ``\\label``
    key keeps them (:func:`dptune.report._table.latex_label` would turn anything else into
    ``-``, so that two different names could give one label)."""
    value = text.strip()
    if not value or len(value) > 100 or not all(
            (ch.isascii() and ch.isalnum()) or ch in "-.:" for ch in value):
        raise argparse.ArgumentTypeError(
            f"must be 1 to 100 ASCII letters, digits, '-', '.' or ':', got {text!r}")
    return value


def bootstrap_replicates(text: str) -> int:
    """An argparse type: 0 (off) or a number of bootstrap replicates in the documented range
    (:data:`dptune.analysis.options.MIN_BOOTSTRAP` .. ``MAX_BOOTSTRAP``)."""
    from dptune.analysis.options import MAX_BOOTSTRAP, MIN_BOOTSTRAP

    value = int_at_least(0)(text)
    if value and not MIN_BOOTSTRAP <= value <= MAX_BOOTSTRAP:
        raise argparse.ArgumentTypeError(f"must be 0 (off) or from {MIN_BOOTSTRAP} to "
                                         f"{MAX_BOOTSTRAP:,} replicates, got {value:,}")
    return value


def resamples(text: str) -> int:
    """An argparse type: resamples of the bootstrap / permutation tests, 1 to
    :data:`dptune.analysis.options.MAX_RESAMPLES`."""
    from dptune.analysis.options import MAX_RESAMPLES

    return int_between(1, MAX_RESAMPLES)(text)


def noise_seeds(text: str) -> int:
    """An argparse type: 0 (off) or an integer >= 2 (an A/A pair needs two seeds)."""
    value = int_at_least(0)(text)
    if value == 1:
        raise argparse.ArgumentTypeError("must be 0 (off) or at least 2, got 1")
    return value


def probability(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def seconds_at_least_0(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0."""
    value = number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


def number(text: str) -> float:
    """An argparse type: any finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def cutoffs(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated distinct positive integers, e.g. ``1,5,10``, each at
    most :data:`dptune.config.MAX_CUTOFF`, the bound of an experiment's ``evaluation.cutoffs``:
    every user's top-N list is held in memory, so ``--cutoffs 100000000`` would exhaust it
    instead of being refused; a cutoff given twice is refused as the experiment file refuses it."""
    from dptune.config import MAX_CUTOFF

    try:  # an empty item ("1,,5", "5,") is a typo, not nothing: refused as any bad item
        vals = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise argparse.ArgumentTypeError(f"cutoffs must be positive integers, got {text!r}")
    if max(vals) > MAX_CUTOFF:
        raise argparse.ArgumentTypeError(f"at most {MAX_CUTOFF:,} (the longest top-N list dptune "
                                         f"evaluates), got {max(vals):,}")
    twice = sorted({v for v in vals if vals.count(v) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"has duplicates ({', '.join(map(str, twice))}), "
                                         f"got {text!r}")
    return vals


def storage_url(text: str) -> str:
    """An argparse type: an optuna storage URL or journal file, not empty: an empty
    ``--storage ''`` would otherwise fall back to the default SQLite file of the results
    directory, so that a worker meant for a shared storage would sweep alone."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty: give an optuna storage URL or a "
                                         "*.journal file")
    return text


def grid_seeds(text: str) -> int:
    """An argparse type: seeds of the split-seed study's grid part, checked as the ``[seeds]``
    table's ``grid_seeds`` is (:func:`dptune.studies.seeds.settings.check_grid_seeds`: 0 to skip
    it, or at least 2), with the same words."""
    from dptune.errors import DptuneError
    from dptune.studies.seeds.settings import check_grid_seeds

    value = int_at_least(0)(text)
    try:
        return check_grid_seeds(value, "--grid-seeds", None)
    except DptuneError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--grid-seeds: ")) from None


def budget(text: str) -> Any:
    """An argparse type: a sweep budget (:func:`dptune.config.parse_budget`): a number of units
    per algorithm, a fraction ``"20%"`` or a time ``"2h"``."""
    from dptune.config import parse_budget
    from dptune.errors import DptuneError

    try:
        return parse_budget(text, "--budget", None)
    except DptuneError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--budget: ")) from None


#: How a TREC run is scored when its flag is left out (``evaluate``, ``dp --runs``): the
#: flags ``--cutoffs``, ``--threshold``, ``--novelty`` and ``--order`` and their defaults.
RUN_OPTIONS: dict[str, Any] = {"cutoffs": (1, 5, 10), "threshold": 4.0,
                               "novelty": "relevance-aware", "order": "trec"}


# --------------------------------------------------------------------------- common flags
def results_option(p: argparse.ArgumentParser, default: str = "results/<name>") -> None:
    """``--results DIR``: where the sweep's results go (an option: the command's subject is a config)."""
    p.add_argument("--results", metavar="DIR", help=f"results directory (default: {default})")


def results_argument(p: argparse.ArgumentParser, optional: bool = False) -> None:
    """``RESULTS`` (positional) or ``--results DIR``: the results directory a command reads."""
    p.add_argument("results_pos", nargs="?", metavar="RESULTS",
                   help="results directory of a sweep (or give --results DIR)")
    extra = ("default: results/<name of --config>" if optional
             else "no default: give RESULTS or --results")
    p.add_argument("--results", metavar="DIR", help=f"the same as RESULTS ({extra})")


def results_of(args: argparse.Namespace, default: Path | None = None) -> Path:
    """The results directory given as ``RESULTS`` or ``--results`` (the same if both)."""
    pos, opt = getattr(args, "results_pos", None), getattr(args, "results", None)
    if pos and opt and Path(pos) != Path(opt):
        raise input_error("--results", None, f"two different results directories given ({pos} and {opt})")
    given = pos or opt
    if given:
        return Path(given)
    if default is None:
        raise input_error("RESULTS", None, "missing: give a results directory (RESULTS or --results DIR)")
    return default


def reports_option(p: argparse.ArgumentParser, default: str | None = "reports/<name>",
                   what: str = "reports directory") -> None:
    """``--reports DIR``: where tables, figures and reports go (required when no ``default``)."""
    tail = f" (default: {default})" if default else ""
    p.add_argument("--reports", dest="reports", metavar="DIR", required=default is None,
                   help=f"{what}{tail}")


def jobs_option(p: argparse.ArgumentParser, default: int | None = None) -> None:
    """``--jobs N``: parallel worker processes (N >= 1); left out, the command's ``default``,
    else (``None``) the experiment's ``[sweep] jobs``, whose own default is
    :class:`dptune.config.SweepConfig`'s."""
    from dptune.config import MAX_JOBS, SweepConfig

    text = f"parallel worker processes, 1 to {MAX_JOBS}"
    if default is None:
        text += f" (default: [sweep] jobs of the experiment, else {SweepConfig().jobs})"
    p.add_argument("--jobs", type=int_between(1, MAX_JOBS), default=default, metavar="N",
                   help=text)


def synth_default(field_name: str) -> str:
    """What a ``data synth`` shape flag left out means, for its help: the ``--preset``'s value,
    else :class:`dptune.data._synth.SynthShape`'s default of that field (worked out when the
    help is shown)."""
    from dptune.data._synth import SynthShape

    value = {f.name: f.default for f in dataclasses.fields(SynthShape)}[field_name]
    if isinstance(value, tuple):
        text = ",".join(map(str, value))
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = str(value)
    return f"the --preset's, else {text}"


def storage_option(p: argparse.ArgumentParser, required: bool = False) -> None:
    """``--storage URL``: the optuna storage shared by the workers of a sweep."""
    p.add_argument("--storage", metavar="URL", required=required, type=storage_url,
                   help="optuna storage: postgresql://user:pass@host/db, sqlite:///path, any "
                        "optuna RDB URL, or a *.journal file" +
                        ("" if required else " (default: [sweep] storage of the experiment, "
                                             "else sqlite in the results directory)"))


def budget_option(p: argparse.ArgumentParser) -> None:
    """``--budget B``: how much of each grid the sweep runs, in whole rounds of its design order."""
    p.add_argument("--budget", type=budget, default=None, metavar="B",
                   help="stop each algorithm's validation units after the whole rounds of the "
                        "design order that fit in B: a number of units per algorithm (45), a "
                        "fraction of each grid (20%%) or a projected wall-clock time (2h, 90m) "
                        "(default: [sweep] budget of the experiment, else every unit)")


def progress_option(p: argparse.ArgumentParser) -> None:
    """``--no-progress``: no progress bars."""
    p.add_argument("--no-progress", action="store_true", help="no progress bars (e.g. in logs)")


# --------------------------------------------------------------------------- former names
class _Deprecated(argparse.Action):
    """A former flag name that still works: the value is kept aside (``deprecated_<dest>``) and
    moved onto the new flag's ``dest`` once parsing is done (:func:`apply_deprecated`)."""

    def __init__(self, option_strings: list[str], dest: str, new: str, new_default: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest=f"deprecated_{dest}", **kwargs)
        self.new, self.target, self.new_default = new, dest, new_default

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, (option_string or self.option_strings[0], values))


class _Refused(argparse.Action):
    """A flag this command does not take although a reader may expect it (a former name, an
    option of a sibling command): one line ``FLAG <why>``, exit code 2, rather than argparse's
    bare "unrecognized arguments"."""

    def __init__(self, option_strings: list[str], dest: str, why: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, **kwargs)
        self.why = why

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser.error(f"{option_string} {self.why}")


def deprecated_flag(p: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept the former flag name ``old`` of the option ``new`` (hidden from the help): it sets
    what ``new`` sets and prints one line ``dptune: OLD is deprecated, use NEW`` on stderr
    (:func:`apply_deprecated`, called by the parser once parsing is done)."""
    action = next(a for a in p._actions if new in a.option_strings)
    p.add_argument(old, action=_Deprecated, dest=action.dest, new=new, new_default=action.default,
                   default=None, metavar=action.metavar, help=argparse.SUPPRESS)


def removed_flag(p: argparse.ArgumentParser, old: str, use: str) -> None:
    """Refuse the former flag name ``old`` with one line (exit code 2) saying what to give
    instead (``use``), rather than argparse's bare "unrecognized arguments"."""
    p.add_argument(old, action=_Refused, why=f"was removed: use {use}", metavar="X",
                   help=argparse.SUPPRESS)


def refused_flag(p: argparse.ArgumentParser, flag: str, why: str) -> None:
    """Refuse ``flag``, which a sibling command takes, with one line (exit code 2) saying why
    this command does not: ``FLAG does not apply here: <why>``."""
    p.add_argument(flag, action=_Refused, why=f"does not apply here: {why}", metavar="X",
                   help=argparse.SUPPRESS)


def apply_deprecated(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Move the value of each former flag name given (:func:`deprecated_flag`) onto its new
    flag, with one warning line each (however often it was given); the old and the new name
    given with different values is an error (one line, exit code 2). Commands (sub-parsers) of
    ``p`` included."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                apply_deprecated(sub, args)
        if not isinstance(action, _Deprecated) or not hasattr(args, action.dest):
            continue
        given = getattr(args, action.dest)
        delattr(args, action.dest)
        if given is None:
            continue
        old, value = given
        current = getattr(args, action.target, None)
        if current is not None and current != action.new_default and current != value:
            p.error(f"{old} and {action.new} give two different values ({value} and {current}); "
                    f"give {action.new} only")
        print(f"dptune: {old} is deprecated, use {action.new}", file=sys.stderr)
        setattr(args, action.target, value)


# --------------------------------------------------------------------------- analysis flags
@dataclass(frozen=True)
class Flag:
    """One analysis flag: its option string, the analysis option (field) it sets, how it parses."""

    flag: str
    field: str
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    run_help: str | None = None  # when ``dptune run`` means something else by it


#: Every analysis flag of ``dptune run`` and ``dptune analyze``, mapped onto the analysis
#: options (the experiment's ``[analysis]`` table). Absent flags leave the experiment's value.
ANALYSIS_FLAGS: tuple[Flag, ...] = (
    Flag("--pairs", "pairs", "configuration pairs of each algorithm's whole grid (scope all: "
         "the verdict, Tables 3-4, Figure 1): every pair when there are at most P, else a "
         "seeded sample of P (25 = the paper's sampling)",
         {"type": int_at_least(1), "metavar": "P"}),
    Flag("--value-pairs", "value_pairs", "the same cap for each hyperparameter-value and "
         "one-at-a-time scope (Table 5)", {"type": int_at_least(1), "metavar": "P"}),
    Flag("--seed", "seed", "pair-sampling seed", {"type": seed_value, "metavar": "SEED"}),
    Flag("--test", "test", "paired significance test", {"choices": TESTS}),
    Flag("--alpha", "alpha", "significance level of the analysis: the family-wise error rate of "
         "the verdict's claims (a metric significantly less discriminative, the dominant "
         "hyperparameter), the level of Sakai's DP and of the test-split comparisons",
         {"type": probability, "metavar": "A"}),
    Flag("--correction", "correction", "multiple-comparison correction of Sakai's DP",
         {"choices": CORRECTIONS}),
    Flag("--n-resamples", "n_resamples", "resamples of the bootstrap / permutation tests "
         "(1 to 100,000)", {"type": resamples, "metavar": "N"}),
    Flag("--bootstrap", "bootstrap", "bootstrap replicates of the DP confidence intervals (0 = off, "
         "else 40 to 100,000)", {"type": bootstrap_replicates, "metavar": "B"}),
    Flag("--stability", "stability", "pair seeds a significance claim must survive (lowered when "
         "not affordable; 0 = one seed)", {"type": int_at_least(0), "metavar": "S"}),
    Flag("--stability-seconds", "stability_seconds", "estimated seconds of extra stability "
         "repeats an algorithm may take; --stability is lowered to what they afford",
         {"type": seconds_at_least_0, "metavar": "SEC"}),
    Flag("--min-fold-users", "min_fold_users", "refuse validation folds with fewer users "
         "(0 = no minimum)", {"type": int_at_least(0), "metavar": "N"}),
    Flag("--min-pairs", "min_pairs", "fewest pairs of configurations on which metrics are "
         "ranked or a claim is made", {"type": int_at_least(1), "metavar": "K"}),
    Flag("--noise-seeds", "noise_seeds", "use at most S seeds of the stored noise floor (0 = none)",
         {"type": noise_seeds, "metavar": "S"},
         run_help="seeds per configuration of the A/A noise floor (0 = off, else at least 2)"),
    Flag("--noise-configs", "noise_configs", "use the N best configurations of the stored noise floor",
         {"type": int_at_least(1), "metavar": "N"},
         run_help="configurations per stochastic algorithm in the noise floor (1 = the best)"),
    Flag("--importance", "importance", "fANOVA / PED-ANOVA hyperparameter importance",
         {"action": argparse.BooleanOptionalAction}),
)


#: The analysis flags that ``dptune run`` also hands to the sweep (the noise floor it trains,
#: the folds it checks before the first unit); the others act on the analysis alone, so they
#: are refused with ``--no-analyze``.
SWEEP_ANALYSIS_FIELDS: tuple[str, ...] = ("noise_seeds", "noise_configs", "min_fold_users")


def analysis_flags(p: argparse.ArgumentParser, run: bool = False,
                   title: str = "analysis (default: the experiment's [analysis] settings)",
                   skip: tuple[str, ...] = (), outside: bool = False) -> None:
    """Add every :data:`ANALYSIS_FLAGS` row (but the fields in ``skip``) to ``p`` in an
    "analysis" group (default: the experiment's ``[analysis]`` value; with ``outside``, for
    data from outside dptune, the defaults of :meth:`dptune.AnalysisOptions.for_outside`). Each
    option's help ends with its default (:func:`analysis_default`, worked out when the help
    is shown, so that building the parser loads no analysis code)."""
    g = p.add_argument_group(title)
    for f in (f for f in ANALYSIS_FLAGS if f.field not in skip):
        action = g.add_argument(f.flag, dest=f"an_{f.field}", default=None,
                                help=(f.run_help if run and f.run_help else f.help), **f.kwargs)
        action.default_text = functools.partial(analysis_default, f.field, outside)  # type: ignore[attr-defined]
    for former, now in RENAMED_OPTIONS.items():
        if now not in skip:
            removed_flag(p, "--" + former.replace("_", "-"), "--" + now.replace("_", "-"))


def analysis_default(field_name: str, outside: bool = False) -> str:
    """What an analysis flag left out means, for its help: the experiment's ``[analysis]``
    value, else the default of :class:`dptune.AnalysisOptions` (``run``, ``analyze``); for
    outside data (``dp``) the options of :meth:`dptune.AnalysisOptions.for_outside`: those
    defaults with the analysis seed :data:`dptune.analysis.options.OUTSIDE_SEED` and importance
    only when hyperparameters are known."""
    from dptune.analysis.options import OUTSIDE_SEED, VALUE_PAIRS, AnalysisOptions

    if outside and field_name == "seed":
        return str(OUTSIDE_SEED)
    if outside and field_name == "importance":
        return "on when --configs gives hyperparameters"
    if field_name == "seed":
        return "the experiment's [analysis] seed, else its seed"
    value = {f.name: f.default for f in dataclasses.fields(AnalysisOptions)}[field_name]
    if field_name == "value_pairs" and value is None:
        text = f"the smaller of --pairs and {VALUE_PAIRS}"
    elif isinstance(value, bool):
        text = "on" if value else "off"
    else:
        text = str(value)
    return text if outside else f"the experiment's [analysis] value, else {text}"


def analysis_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """``{option field: value}`` of the analysis flags given on the command line."""
    out = {}
    for f in ANALYSIS_FLAGS:
        value = getattr(args, f"an_{f.field}", None)
        if value is not None:
            out[f.field] = value
    return out
