"""The optuna storage's failures are one line naming the storage: a damaged SQLite file or
journal is found by reading it once (``quick_check``, one JSON record per line), and an error
of the database while a sweep uses it (a lost PostgreSQL server, a full disk) names the
storage, its password masked, instead of a traceback."""

from __future__ import annotations

import sqlite3

import optuna
import pytest
import sqlalchemy.exc

from dptune.errors import DptuneError
from dptune.sweeper._storage import journal_problem, sqlite_problem, storage_errors

URL = "postgresql+psycopg2://me:secret@db.example.org:5432/dptune"


def _from_the_driver(message: str) -> None:
    """Raise what optuna raises when its database fails mid-commit: its own error, from
    SQLAlchemy's, from the driver's."""
    try:
        raise sqlalchemy.exc.OperationalError("UPDATE trials", {}, Exception(message))
    except sqlalchemy.exc.OperationalError as err:
        raise optuna.exceptions.StorageInternalError("An exception is raised during the "
                                                     "commit.") from err


def test_a_lost_database_server_is_one_line_naming_the_storage(tmp_path):
    with pytest.raises(DptuneError) as caught, storage_errors(URL, tmp_path):
        _from_the_driver("server closed the connection unexpectedly\n\tThis probably means "
                         "the server terminated abnormally")
    msg = str(caught.value)
    assert "\n" not in msg and msg.startswith("postgresql+psycopg2://me:***@db.example.org")
    assert "secret" not in msg and "server closed the connection unexpectedly" in msg
    assert "run the same command" in msg


def test_a_full_disk_under_the_default_storage_names_it(tmp_path):
    with pytest.raises(DptuneError) as caught, storage_errors(None, tmp_path):
        _from_the_driver("database or disk is full")
    assert str(caught.value).startswith(f"{tmp_path / 'optuna.db'}: out of space")


def test_other_errors_pass_unchanged(tmp_path):
    with pytest.raises(KeyError), storage_errors(URL, tmp_path):
        raise KeyError("not the storage's")


def test_an_intact_or_missing_file_has_no_problem(tmp_path):
    db = tmp_path / "a.db"
    assert sqlite_problem(db) is None and journal_problem(tmp_path / "a.journal") is None
    con = sqlite3.connect(db)
    con.execute("create table t (x)")
    con.executemany("insert into t values (?)", [(i,) for i in range(2000)])
    con.commit()
    con.close()
    assert sqlite_problem(db) is None
    (tmp_path / "a.journal").write_bytes(b'{"op": 0}\n{"op": 1}\n{"op": 2, "unfini')
    assert journal_problem(tmp_path / "a.journal") is None  # a record still being written


def test_a_damaged_file_is_found(tmp_path):
    db = tmp_path / "a.db"
    con = sqlite3.connect(db)
    con.execute("create table t (x)")
    con.executemany("insert into t values (?)", [(str(i) * 50,) for i in range(2000)])
    con.commit()
    con.close()
    data = bytearray(db.read_bytes())
    data[3 * 4096:3 * 4096 + 8] = b"\xff" * 8  # a page header; the file header intact
    db.write_bytes(bytes(data))
    why = sqlite_problem(db)
    assert why is not None and "\n" not in why
    (tmp_path / "a.journal").write_bytes(b'{"op": 0}\n{garbled\n{"op": 2}\n')
    assert journal_problem(tmp_path / "a.journal") == "record 2 of 3 is not valid JSON"


@pytest.mark.parametrize("url", ["new.journal", "journal:new.journal", "sqlite:///new.db"])
def test_a_reader_does_not_create_a_storage_file(tmp_path, monkeypatch, url):
    """dptune status --storage new.journal made an empty journal file: a reader's open (no
    repair) of a file that does not exist is one line naming it, and nothing is written."""
    from dptune.sweeper._storage import open_storage

    monkeypatch.chdir(tmp_path)
    with pytest.raises(DptuneError, match=r"^--storage: .*'new\.(journal|db)' does not exist"):
        open_storage(url, tmp_path, repair=False)
    assert list(tmp_path.iterdir()) == []


def test_status_reads_the_storage_the_results_recorded(tmp_path):
    """``dptune status RESULTS`` without ``--config`` or ``--storage`` on a sweep whose
    experiment names ``[sweep] storage`` opened no storage (running and failed read 0, with
    no word); it reads the storage the results recorded, and names its field when it fails."""
    from conftest import write_synthetic_experiment

    from dptune.config import load_experiment
    from dptune.sweeper._manifest import init_results
    from dptune.sweeper._status import status

    journal = tmp_path / "shared.journal"
    cfg = write_synthetic_experiment(tmp_path, "recorded",
                                     sweep=f'[sweep]\njobs = 1\nstorage = "{journal}"\n')
    results = tmp_path / "results"
    init_results(load_experiment(cfg), results)  # the manifest, no unit
    journal.write_text("")  # a journal the workers have started (no record yet)
    st = status(None, results, None)
    assert st["storage"] == str(journal) and st["storage_problem"] is None
    assert all(a["done"] == 0 for a in st["algorithms"].values())
    journal.unlink()  # gone: the parts are reported, the problem names the URL's field
    problem = status(None, results, None)["storage_problem"]
    assert problem.startswith(f"{cfg}: sweep.storage: journal file")
    assert "does not exist" in problem and not journal.exists()


def test_status_refuses_a_given_storage_it_cannot_open_before_reading_anything(tiny_swept,
                                                                               tmp_path,
                                                                               capsys):
    """``dptune status RESULTS --storage sqlite:////missing.db`` on results with parts printed
    the table with ``storage: --storage: ... does not exist`` below it and exited 0: a
    storage the user named is bad input, one line naming ``--storage``, exit code 2, before
    any of the status is read (nothing on stdout), and no file is made for it."""
    from conftest import one_error_line

    from dptune.cli import main

    missing = tmp_path / "missing.db"
    assert main(["status", str(tiny_swept / "results"), "--storage", f"sqlite:///{missing}"]) == 2
    out, err = capsys.readouterr()
    line = one_error_line(err)
    assert line == (f"dptune: --storage: SQLite file '{missing}' does not exist (a reader does "
                    "not create a storage)"), line
    assert out == "" and not missing.exists()
