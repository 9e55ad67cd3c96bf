"""The argument parser: one argparse tree for every command, studies included.

Help text on every option, with its default and choices; errors are one line
(``dptune: run: argument --jobs: must be an integer >= 1, got 0``) with exit code 2.
"""

from __future__ import annotations

import argparse
import functools
import textwrap
from typing import NoReturn

from dptune import __version__
from dptune.cli import _commands as c
from dptune.cli._flags import (
    RUN_OPTIONS,
    analysis_flags,
    apply_deprecated,
    budget_option,
    cutoffs,
    deprecated_flag,
    grid_seeds,
    int_at_least,
    int_between,
    jobs_option,
    number,
    progress_option,
    refused_flag,
    removed_flag,
    reports_option,
    results_argument,
    results_option,
    seed_value,
    storage_option,
    synth_default,
    table_label,
)
from dptune.errors import did_you_mean
from dptune.store._trec import ORDERS
from dptune.vocab import (
    DEVICES,
    FORMATS,
    METRICS,
    SLICE_BASE_RANGE,
    SLICE_MIN_USERS,
    TESTS,
    metric_name,
)

DESCRIPTION = """\
Discriminative power of recommender-system metrics under hyperparameter tuning: sweep the
grids of an experiment (resumable, on one machine or many), then measure how well each
metric@N tells configurations apart, with tables, figures and report.md.

Start with: dptune run experiments/quickstart.toml   (then see reports/quickstart/report.md)"""

TREC_FORMATS = """\
file formats (whitespace separated, one record per line, blank lines ignored, ids are strings):
  run    user Q0 item rank score tag   (exactly 6 fields; Q0 and tag are not used)
  qrels  user 0 item rating            (exactly 4 fields; relevant = rating >= --threshold)
  train  user item [anything ...]      (at least 2 fields; every listed pair is one training
                                        interaction; extra fields such as rating and timestamp
                                        are ignored)

ranking of a user: the run's training items (pairs listed in train) are removed first, then
the rest is ordered (--order) and cut at N; this is dptune's own protocol (a model ranks every
item the user has not rated in training).
  --order trec  score descending, ties by item id descending (string order), the rank field
                ignored: trec_eval's order, so per-user values equal trec_eval's on
                binary relevance (default; nDCG's gain is 1, not the qrels grade; a user
                without a line in the run scores 0, as with trec_eval -c)
  --order rank  the rank field ascending, ties by file order, the score ignored"""

DP_LAYOUT = TREC_FORMATS + """

layout: --runs holds one run file per system (file name = system), or one sub-directory per
fold holding the same file names; --qrels and --train are one file, or a directory with one
file per fold (file stem = fold name)."""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the layout of descriptions and epilogs; appends ``(default: X)`` to an option's help
    when the help does not already state it: the option's ``default_text()`` when it has one
    (an analysis flag, whose default is the experiment's), else its default value when that
    means something (not ``None``, not a switch's ``False``; ``0`` is a value)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text or not action.option_strings or isinstance(action, argparse._HelpAction):
            return text
        explain = getattr(action, "default_text", None)
        if callable(explain):
            return f"{text} (default: {explain()})"
        if default is None or default is False or default is argparse.SUPPRESS:
            return text
        if isinstance(default, tuple):
            default = ",".join(map(str, default))
        return f"{text} (default: {default})"


def _once(base: type[argparse.Action]) -> type[argparse.Action]:
    """``base`` (an option's action) that refuses the option given twice with different values
    (``--results a --results b``, ``--importance --no-importance``): argparse keeps the last one
    silently, so the command would write or compute where the first one did not ask. The same
    value twice (a script adding ``--no-progress`` again) is harmless and kept; a repeatable
    flag (``--config-id``, an ``append``) is not wrapped."""

    class Once(base):  # type: ignore[misc, valid-type]
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                     values: object, option_string: str | None = None) -> None:
            super().__call__(parser, namespace, values, option_string)
            if not self.option_strings:  # a positional is consumed once
                return
            # this parse's record, which :meth:`_Parser.parse_known_args` starts
            given = parser._given  # type: ignore[attr-defined]
            shown = option_string if self.nargs == 0 else f"{option_string} {_shown(values)}"
            value = getattr(namespace, self.dest, None)
            if self.dest in given and given[self.dest][1] != value:
                parser.error(f"argument {option_string}: given twice ({given[self.dest][0]} and "
                             f"{shown}); give it once")
            given[self.dest] = (shown, value)

    Once.__name__ = Once.__qualname__ = f"Once{base.__name__}"
    return Once


def _shown(value: object) -> str:
    """A flag's parsed value as the command line wrote it (a budget's text, cutoffs 1,5,10)."""
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(getattr(value, "text", value))


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, exit code 2, whose former flag names
    (:func:`dptune.cli._flags.deprecated_flag`) set their new flag with one warning line, and
    whose options refuse two different values (:func:`_once`)."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        for name in (None, "store", "store_true", "store_false", argparse.BooleanOptionalAction):
            self.register("action", name, _once(self._registry_get("action", name, name)))

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def, override]
        self._given: dict[str, tuple[str, object]] = {}
        parsed, extra = super().parse_known_args(args, namespace)
        apply_deprecated(self, parsed)
        return parsed, extra

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("dptune").strip()
        prefix = f"dptune: {where}: " if where else "dptune: "
        self.exit(2, f"{prefix}{message} (see {self.prog} --help)\n")


def _sub(sub: argparse._SubParsersAction, name: str, summary: str, description: str | None = None,
         epilog: str | None = None) -> argparse.ArgumentParser:
    """A command: ``summary`` in the list of commands, ``description`` (default: the summary as a
    sentence) wrapped at the top of its help, ``epilog`` (kept as laid out) at the bottom."""
    text = textwrap.fill(description or summary[:1].upper() + summary[1:] + ".", width=78,
                         break_on_hyphens=False)
    return sub.add_parser(name, help=summary, description=text, epilog=epilog, formatter_class=_Formatter)


def _run_options(p: argparse.ArgumentParser, prefix: str = "", unset: bool = False) -> None:
    """``--cutoffs``, ``--threshold``, ``--novelty`` and ``--order``: how a TREC run is scored
    (``evaluate``, ``dp --runs``), with the defaults of :data:`RUN_OPTIONS`. With ``unset``
    (``dp``, where they apply to ``--runs`` only) an option left out is ``None``, so that the
    command can tell one given with ``--per-user`` (refused) from one left out; its help still
    shows the default."""
    kinds = {"cutoffs": {"type": cutoffs, "metavar": "N,N,...", "help": "metric cutoffs"},
             "threshold": {"type": number, "metavar": "R", "help": "relevance threshold, a qrels "
                           "rating >= R is relevant"},
             "novelty": {"choices": ["relevance-aware", "relevance-unaware"],
                         "help": "EFD/EPC variant"},
             "order": {"choices": ORDERS, "help": "order of a user's run rows (see below)"}}
    for name, kw in kinds.items():
        default = RUN_OPTIONS[name]
        action = p.add_argument(f"--{name}", **{**kw, "help": prefix + kw["help"]},
                                default=None if unset else default)
        if unset:
            text = ",".join(map(str, default)) if isinstance(default, tuple) else str(default)
            action.default_text = functools.partial(str, text)  # type: ignore[attr-defined]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    p = _Parser(prog="dptune", description=DESCRIPTION, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"dptune {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser,
                          help="one of the commands below; dptune COMMAND --help for its options")

    r = _sub(sub, "run", "sweep an experiment (resumable), train its noise floor, then analyze it")
    r.add_argument("config", metavar="CONFIG", help="experiment TOML file, e.g. experiments/quickstart.toml")
    results_option(r)
    reports_option(r)
    jobs_option(r)
    storage_option(r)
    budget_option(r)
    progress_option(r)
    r.add_argument("--no-analyze", action="store_true", help="stop after the sweep and noise floor")
    r.add_argument("--device", choices=DEVICES, default=None,
                   help="train BPR-MF and evaluate on this device (default: [sweep] device, "
                        "else cpu; cuda needs pip install -e '.[gpu]')")
    analysis_flags(r, run=True)
    r.set_defaults(func=c.cmd_run)

    w = _sub(sub, "worker", "join a sweep as one more worker (any machine; see docs/distributed.md)")
    w.add_argument("config", metavar="CONFIG", help="experiment TOML file (the same on every machine)")
    storage_option(w, required=True)
    results_option(w)
    budget_option(w)
    progress_option(w)
    w.set_defaults(func=c.cmd_worker)

    s = _sub(sub, "status", "progress of a run: validation parts, a unit on one fold (done / "
             "running / failed / remaining), whole units, test split, noise floor, analysis")
    results_argument(s, optional=True)
    s.add_argument("--config", metavar="CONFIG",
                   help="experiment TOML file (default: the one recorded in the results directory)")
    storage_option(s)
    s.add_argument("--reports", metavar="DIR", help="reports directory whose report.md is checked "
                   "(default: the one the last dptune run of RESULTS wrote, else reports/<name> "
                   "for results in results/<name>)")
    s.set_defaults(func=c.cmd_status)

    a = _sub(sub, "analyze", "discriminative power tables, figures and report.md of a results directory")
    results_argument(a)
    reports_option(a)
    progress_option(a)
    analysis_flags(a)
    a.set_defaults(func=c.cmd_analyze)

    e = _sub(sub, "evaluate", "per-user metrics of an external TREC run", epilog=TREC_FORMATS)
    e.add_argument("--run", required=True, metavar="FILE", help="run file (format below)")
    e.add_argument("--qrels", required=True, metavar="FILE", help="qrels file (format below)")
    e.add_argument("--train", required=True, metavar="FILE", help="training interactions (format below)")
    _run_options(e)
    e.add_argument("--out", required=True, metavar="FILE", help="per-user metrics file to write (CSV)")
    e.set_defaults(func=c.cmd_evaluate)

    d = _sub(sub, "dp", "discriminative power of external TREC runs or of a per-user table",
             epilog=DP_LAYOUT)
    none = " (no default: give --runs, --qrels and --train, or --per-user)"
    d.add_argument("--runs", metavar="DIR",
                   help="directory of run files (one per system; sub-directories = folds)" + none)
    d.add_argument("--qrels", metavar="PATH",
                   help="qrels file, or directory with one per fold" + none)
    d.add_argument("--train", metavar="PATH",
                   help="train file, or directory with one per fold" + none)
    d.add_argument("--per-user", metavar="FILE",
                   help="instead of runs: long per-user table (CSV/Parquet: [algorithm], "
                   "config_id|system, [fold], user, metric, [cutoff], value)" + none)
    d.add_argument("--configs", metavar="FILE",
                   help="with --per-user: algorithm, config_id and one column per hyperparameter "
                   "(default: none, so DP of scope all only)")
    d.add_argument("--label", type=table_label, default=None, metavar="NAME",
                   help="what starts the LaTeX labels of the report's tables, tab:NAME:table3 "
                   "(default: the input file's or folder's name; give two analyses of files of "
                   "one name labels of their own)")
    reports_option(d, default="reports/runs")
    d.set_defaults(reports="reports/runs")
    _run_options(d, "with --runs: ", unset=True)
    progress_option(d)
    analysis_flags(d, title="analysis (default: those of dptune analyze, analysis seed 42; no "
                   "noise floor: it needs retraining)", skip=("noise_seeds", "noise_configs"),
                   outside=True)
    for flag in ("--noise-seeds", "--noise-configs"):
        refused_flag(d, flag, "outside data has no A/A noise floor, which needs the models "
                     "retrained with other seeds (dptune run trains one)")
    d.set_defaults(func=c.cmd_dp)

    g = _sub(sub, "subgrid", "the paper's sub-grid around the best value of each hyperparameter")
    results_argument(g)
    g.add_argument("--algorithm", default=None, metavar="NAME",
                   help="algorithm of the experiment (default: the store's only algorithm with "
                   "hyperparameters to vary; required when it has several)")
    # any case of a dptune metric's name is that metric (NDCG is ndcg), as everywhere else
    g.add_argument("--metric", type=metric_name, choices=METRICS, default="ndcg",
                   help="metric that picks the best configuration (any case)")
    g.add_argument("--cutoff", type=int_at_least(1), default=10, metavar="N", help="cutoff of --metric")
    # radius 0 keeps the best configuration alone: a grid dptune run refuses (nothing to compare)
    g.add_argument("--radius", type=int_at_least(1), default=2, metavar="R",
                   help="grid neighbours kept on each side of the best value, at least 1")
    g.add_argument("--out", required=True, metavar="FILE", help="grid TOML file to write")
    g.add_argument("--grid", metavar="FILE", help="grid to place the sub-grid in, e.g. grids/bpr-mf.toml "
                   "(default: the swept grid)")
    g.set_defaults(func=c.cmd_subgrid)

    sd = _sub(sub, "seeds", "split-seed study: hold-out vs k-fold CV over data-split seeds",
              description="Split-seed study: accuracy under S data-split seeds, random hold-out vs "
              "k-fold CV, and the stability of the best configuration and of the DP metric ranking.")
    sd.add_argument("config", metavar="CONFIG", help="experiment TOML, optionally with a [seeds] table")
    sd.add_argument("--seeds", type=int_at_least(2), metavar="S",
                    help="number of data-split seeds (default: [seeds] of the experiment, else 20)")
    sd.add_argument("--results", metavar="DIR", help="per-seed results (default: [seeds] cache of "
                    "the experiment, else results/seeds-<name>, or results/<name> for a name "
                    "that starts with seeds)")
    deprecated_flag(sd, "--cache", "--results")
    reports_option(sd, default="reports/seeds-<name>, or reports/<name> for a name that starts "
                   "with seeds", what="report directory")
    removed_flag(sd, "--out", "--reports DIR")
    jobs_option(sd, default=1)
    sd.add_argument("--config-id", action="append", default=[], metavar="ALG=ID",
                    help="run ALG with grid configuration ID instead of the default (repeatable)")
    sd.add_argument("--grid", metavar="ALG,ALG,...",
                    help="algorithms of the grid part ('' to skip; default: [seeds] of the "
                    "experiment)").empty_allowed = True  # '' means no algorithm: _refuse_empty
    sd.add_argument("--grid-seeds", type=grid_seeds, metavar="S", help="seeds of the grid part, "
                    "0 to skip it or at least 2 (default: [seeds] of the experiment)")
    progress_option(sd)
    sd.set_defaults(func=c.cmd_seeds)

    sl = _sub(sub, "slices", "metrics, miss rate and DP per user slice",
              description="Metrics, miss rate and DP per user slice (history length, popularity of "
              "held-out items; log-scaled bins) of a results directory.")
    results_argument(sl)
    reports_option(sl, default=None, what="directory for the slice report (no default: required)")
    removed_flag(sl, "--out", "--reports DIR for the slice report (and --main-reports DIR for "
                 "the main reports whose pairs it reuses)")
    sl.add_argument("--main-reports", metavar="DIR", help="main reports directory whose pairs.csv gives "
                    "the pairs (default: the pairs are sampled here with --pairs and --seed)")
    sl.add_argument("--experiment", metavar="CONFIG", help="experiment TOML (default: the manifest's)")
    sl.add_argument("--base", type=int_between(*SLICE_BASE_RANGE), default=2, metavar="B",
                    help="base of the log-scaled bins, {} to {:,}".format(*SLICE_BASE_RANGE))
    sl.add_argument("--pairs", type=int_at_least(1), metavar="P", help="pairs P (default: the manifest's)")
    sl.add_argument("--seed", type=seed_value, metavar="SEED",
                    help="pair-sampling seed (default: the manifest's)")
    sl.add_argument("--test", choices=TESTS, help="paired test (default: the manifest's)")
    sl.add_argument("--cutoff", type=int_at_least(1), metavar="N",
                    help="cutoff of the figure and tables (default: the primary cutoff)")
    sl.add_argument("--min-users", type=int_at_least(2), default=SLICE_MIN_USERS, metavar="U",
                    help="fewest users a slice must have in every fold to be ranked and drawn "
                    f"(default {SLICE_MIN_USERS})")
    progress_option(sl)
    sl.set_defaults(func=c.cmd_slices)

    dt = _sub(sub, "data", "fetch data sets or print their statistics (Table 1)")
    dsub = dt.add_subparsers(dest="data_command", metavar="ACTION", required=True, parser_class=_Parser,
                            help="fetch, info or synth")
    f = _sub(dsub, "fetch", "download ml-100k or ml-1m into the cache ($DPTUNE_DATA, default ~/.cache/dptune)")
    f.add_argument("name", choices=["ml-100k", "ml-1m"], metavar="NAME", help="ml-100k or ml-1m")
    f.set_defaults(func=c.cmd_data_fetch)
    i = _sub(dsub, "info", "Table 1 statistics of a data set name or file")
    i.add_argument("source", metavar="SOURCE", help="ml-latest-small, ml-100k, ml-1m or a file path")
    i.add_argument("--format", choices=FORMATS, default="auto", help="file format")
    i.add_argument("--columns", metavar="MAP", help="own file: which column holds what, e.g. "
                   "user=user_id,item=item_id[,rating=stars][,timestamp=ts] (names, or 0-based "
                   "positions with --no-header); leave out rating for implicit feedback "
                   "(default: found by their usual names: user/user_id/userId, item/item_id/"
                   "movieId, rating, timestamp)")
    i.add_argument("--sep", help="own file: field separator (one character, or tab, comma, "
                   "semicolon, space, pipe; default: tab for a .tsv file or a first line with "
                   "tabs and no comma, else comma)")
    i.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                   help="own file: whether the first line names the columns (default: yes)")
    i.set_defaults(func=c.cmd_data_info)
    sy = _sub(dsub, "synth", "write a seeded synthetic data set of a given shape (offline)",
              description="Write a synthetic rating file (MovieLens ratings.csv layout) with exactly "
              "the given users, items and ratings, Zipf-shaped popularity and activity, and "
              "timestamps; a stand-in for a real data set's shape and skew, not its preferences.")
    sy.add_argument("--out", required=True, metavar="FILE", help="output file (.csv or .csv.gz)")
    sy.add_argument("--preset", choices=["amazon-movies"], help="a named shape (Amazon Movies: "
                    "16,141 users, 111,537 items, 858,314 ratings); the flags below override it "
                    "(default: none, the sizes below)")
    sy.add_argument("--seed", type=seed_value, default=0, help="random seed")
    for flag, kind, metavar, what in (
            ("users", int_at_least(1), "N", "users"), ("items", int_at_least(1), "N", "items"),
            ("ratings", int_at_least(1), "N", "distinct (user, item) ratings"),
            ("min-user-ratings", int_at_least(1), "N", "ratings of every user at least"),
            ("popularity-exponent", number, "X", "Zipf exponent of item popularity"),
            ("activity-exponent", number, "X", "Zipf exponent of user activity"),
            ("rating-probs", None, "P1,..,P5", "probabilities of 1 .. 5 stars")):
        action = sy.add_argument(f"--{flag}", type=kind, metavar=metavar, help=what)
        action.default_text = functools.partial(synth_default, flag.replace("-", "_"))  # type: ignore[attr-defined]
    sy.set_defaults(func=c.cmd_data_synth)
    return p


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; exits with code 2 and one line on a bad flag. An argument no parser
    takes is named by the command it was given to, with the closest flag of that command when
    one is close (``dptune: analyze: unrecognized arguments: --reprots x (did you mean
    '--reports'?) (see dptune analyze --help)``), not by the top-level parser."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = _command_parser(parser, args)
        flag = next((a.split("=", 1)[0] for a in extra if a.startswith("--")), None)
        shown = [o for a in command._actions if a.help != argparse.SUPPRESS
                 for o in a.option_strings if o.startswith("--")]
        hint = did_you_mean(flag, shown) if flag else ""
        command.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    _refuse_empty(_command_parser(parser, args), args)
    return args


def _refuse_empty(command: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """An empty value given to a flag or argument (``--results ''``, a variable that expanded
    to nothing) is one line naming it: every value a command takes names something, and an
    empty path fell back silently to the default folder, writing where the user did not ask.
    A flag whose empty value means something (``seeds --grid ''``: skip the grid part) is
    marked ``empty_allowed`` where it is declared."""
    for action in command._actions:
        if getattr(action, "empty_allowed", False):
            continue
        value = getattr(args, action.dest, None)
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            name = action.option_strings[-1] if action.option_strings else action.metavar \
                or action.dest
            command.error(f"argument {name}: must not be empty")


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub-)parser of the command ``args`` ran: ``dptune data fetch``'s, ``dptune run``'s,
    or ``parser`` itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _command_parser(action.choices[chosen], args)
    return parser


