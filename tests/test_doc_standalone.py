"""The documentation stands alone: it explains the method in its own words, so no page of it
(README.md, docs/*.md, reports/README.md) sends the reader to the project's working notes: a
method specification file, an issue number or a work session. A reader without them finds
every reason written where it is used."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "reports" / "README.md"]

#: What points outside the docs: the specification file, "issue 12" / "issue #12" / "#12" /
#: "the issue",
#: and a work session ("this session", "the last session", "sessions").
OUTSIDE = re.compile(r"SPEC\.md|\bissues?\s*#?\d+|\b(?:the|this|that) issues?\b|(?<![\w&])#\d+\b"
                     r"|\bsessions?\b", re.IGNORECASE)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_cite_no_working_notes(doc: Path) -> None:
    found = [f"{doc.relative_to(ROOT)}:{n}: {m.group(0)!r} in {line.strip()[:100]!r}"
             for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
             for m in OUTSIDE.finditer(line)]
    assert not found, "\n".join(found)


def test_the_pattern_finds_what_it_names() -> None:
    for text in ("see SPEC.md", "fixed in issue 40", "issue #7", "as #12 asked",
                 "measured in this session", "earlier sessions", "as the issue prescribes"):
        assert OUTSIDE.search(text), text
    for text in ("a colour #1f77b4", "the 2nd pass", "section 10a", "`&#39;`"):
        assert not OUTSIDE.search(text), text
