"""What the own-data tests share: the one-line error check of a reader's refusal."""

from __future__ import annotations

import pytest

from dptune.errors import DptuneError


def one_line_error(match: str, fn, *args, **kwargs) -> str:
    """The message of the :class:`DptuneError` ``fn(*args, **kwargs)`` raises, which must match
    ``match`` and be one line."""
    with pytest.raises(DptuneError, match=match) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg
    return msg
