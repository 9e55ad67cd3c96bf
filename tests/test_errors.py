"""How a one-line error shows the value or the path it names (``dptune/errors.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dptune.errors import message_path, plain


@pytest.mark.parametrize(("value", "shown"), [
    ("abc", "'abc'"),
    (3, "3"),
    (0.5, "0.5"),
    (np.float64("inf"), "inf"),
    (np.int64(7), "7"),
    (np.str_("x"), "'x'"),
    (10**30, str(10**30)),  # spelt out up to 100 digits
    (10**400, "an integer of 401 digits"),
    (-10**5000, "a negative integer of 5,001 digits"),
    ([1, "a"], "[1, 'a']"),
    ([1, 10**5000], "a list holding an integer of more digits than Python spells out"),
    ({"k": (10**5000,)}, "a dict holding an integer of more digits than Python spells out"),
], ids=["str", "int", "float", "np-inf", "np-int", "np-str", "30-digits", "401-digits",
        "5001-digits", "list", "list-of-a-huge-integer", "dict-of-a-huge-integer"])
def test_plain_shows_every_value_in_one_short_line(value, shown):
    """``repr`` but for numpy's scalars (as Python numbers), integers of hundreds of digits
    (by their size) and containers of an integer Python refuses to spell out (by their type:
    ``repr`` raised ValueError)."""
    assert plain(value) == shown


def test_message_path_keeps_a_path_and_shortens_a_name_no_file_system_takes():
    """A path of up to 200 characters as written; a longer one by its first 60 and ``...``; a
    NUL character as ``\\0``, never written into a message."""
    assert message_path(Path("reports") / "quickstart") == "reports/quickstart"
    assert message_path("x" * 200) == "x" * 200
    assert message_path("x" * 201) == "x" * 60 + "..."
    assert message_path("a\0b") == "a\\0b"
    assert message_path(3) == "3"


@pytest.mark.parametrize(("value", "why"), [
    ("9" * 5000, "File name too long"), (Path("a") / ("9" * 300), "File name too long"),
    ("a\0b", "a NUL character")], ids=["5000-characters", "300-character-name", "nul"])
def test_check_path_refuses_a_path_no_file_can_have(value, why):
    """A front function's path argument that no file can have is one line naming the argument
    (its first file-system call raised OSError or ValueError); a path that merely does not
    exist is the caller's business."""
    from dptune.errors import DptuneError, check_path

    with pytest.raises(DptuneError) as err:
        check_path(value, "sweep", "results")
    assert str(err.value).startswith("sweep: results: ") and str(err.value).endswith(
        f" cannot name a file ({why})"), err.value
    check_path("no/such/folder", "sweep", "results")
    check_path(Path("reports") / "quickstart", "sweep", "results")


def test_unnamable_is_the_one_rule_of_a_path_no_file_can_have(tmp_path):
    """A NUL character, or a name over 255 bytes (also under a folder not made yet, and in
    UTF-8 bytes, not characters); a long path of short names, a missing file and an existing
    folder can all be named."""
    from dptune.errors import unnamable

    assert unnamable("a\0b") == "a NUL character"
    assert unnamable(tmp_path / "new" / ("9" * 256)) == "File name too long"
    assert unnamable("é" * 128) == "File name too long"  # 256 bytes
    assert unnamable("é" * 127) is None
    assert unnamable("/".join(["x" * 200] * 10)) is None
    assert unnamable(tmp_path) is None and unnamable(tmp_path / "missing.csv") is None
