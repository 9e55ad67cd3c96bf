"""Workers take grid points in the design's order: every fold of a unit before the next unit,
never a unit outside the budget, and two workers asking together get two folds of one unit."""

from __future__ import annotations

import optuna
import pytest

from dptune.sweeper._sampler import DesignSampler

FOLDS = ["0", "1", "2"]
SPACE = {"fold": FOLDS, "factors": [8, 16], "learning_rate": [0.05, 0.1]}
# a design order of the 2 x 2 units
ORDER = [{"factors": 16, "learning_rate": 0.1}, {"factors": 8, "learning_rate": 0.05},
         {"factors": 8, "learning_rate": 0.1}, {"factors": 16, "learning_rate": 0.05}]


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.ERROR)


def _study(units: list[dict]) -> optuna.Study:
    points = [[{"fold": f, **u} for f in FOLDS] for u in units]
    return optuna.create_study(sampler=DesignSampler(SPACE, seed=7, units=points),
                               direction="maximize")


def _ask(study: optuna.Study) -> optuna.Trial:
    trial = study.ask()
    for name, choices in SPACE.items():
        trial.suggest_categorical(name, choices)
    return trial


def _unit(trial: optuna.Trial) -> dict:
    return {k: v for k, v in trial.params.items() if k != "fold"}


def _optimize(study: optuna.Study) -> list[dict]:
    """Run the study to its end (the sampler stops it) and return the points in order."""
    calls = []

    def objective(trial: optuna.Trial) -> float:
        calls.append({name: trial.suggest_categorical(name, c) for name, c in SPACE.items()})
        return 1.0

    study.optimize(objective)  # no n_trials: the sampler stops the study
    return calls


def test_one_worker_takes_every_fold_of_a_unit_then_the_next_unit_in_design_order():
    seen = _optimize(_study(ORDER))
    assert [{k: v for k, v in c.items() if k != "fold"} for c in seen] == [
        u for u in ORDER for _ in FOLDS]
    for j in range(4):
        assert sorted(c["fold"] for c in seen[3 * j:3 * j + 3]) == FOLDS


def test_the_budget_is_never_exceeded_and_optimize_stops_at_it():
    calls = _optimize(_study(ORDER[:2]))  # a budget of the first two units
    assert [{k: v for k, v in c.items() if k != "fold"} for c in calls] == [
        u for u in ORDER[:2] for _ in FOLDS]


def test_two_workers_asking_together_take_two_folds_of_the_same_unit():
    study = _study(ORDER)
    a, b = _ask(study), _ask(study)  # both RUNNING
    assert _unit(a) == _unit(b) == ORDER[0] and a.params["fold"] != b.params["fold"]
    c = _ask(study)
    assert _unit(c) == ORDER[0]
    d = _ask(study)  # the first unit is taken: the next one
    assert _unit(d) == ORDER[1]


def test_a_unit_whose_points_are_all_taken_is_handed_out_again_for_waiting():
    """When every point of the budget has a trial, the next trial gets a running point of the
    earliest unit not finished (its worker then waits for, or defers to, the live owner)."""
    study = _study(ORDER[:1])
    first = [_ask(study) for _ in FOLDS]
    study.tell(first[0], 1.0)
    again = _ask(study)
    assert _unit(again) == ORDER[0] and again.params["fold"] in {t.params["fold"] for t in first[1:]}
