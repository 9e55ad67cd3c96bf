"""A worker whose trial was finished by another worker (two SQLite workers can take the same
queued trial) goes on with the grid instead of dying; any other error still stops it."""

from __future__ import annotations

import pytest

from dptune.errors import DptuneError
from dptune.sweeper import _worker


class _Study:
    """A stand-in study whose ``optimize`` raises the given errors in turn, then returns."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def optimize(self, objective, callbacks, gc_after_trial):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


def test_a_trial_told_elsewhere_is_walked_past():
    study = _Study(ValueError("Cannot tell a COMPLETE trial."),
                   ValueError("Cannot tell a FAIL trial."))
    _worker._optimize(study, lambda t: 0.0, [])
    assert study.calls == 3


def test_any_other_value_error_is_raised():
    study = _Study(ValueError("Cannot tell a COMPLETE trial."), ValueError("something else"))
    with pytest.raises(ValueError, match="something else"):
        _worker._optimize(study, lambda t: 0.0, [])
    assert study.calls == 2


def test_a_storage_that_keeps_refusing_is_one_error(monkeypatch):
    monkeypatch.setattr(_worker, "MAX_TOLD_ELSEWHERE", 3)
    study = _Study(*[ValueError("Cannot tell a COMPLETE trial.")] * 5)
    with pytest.raises(DptuneError, match="finished by other workers"):
        _worker._optimize(study, lambda t: 0.0, [])
    assert study.calls == 3
