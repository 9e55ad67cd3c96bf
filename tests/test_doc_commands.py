"""The documentation's commands exist: every ``dptune COMMAND ... --flag`` and ``python -m
dptune.bench [MODE] ... --flag`` written in README.md, docs/*.md, reports/README.md, the
experiment files' comments, tools/*.sh and .ci/run names a command and flags its parser shows in
its help. A flag renamed, removed or hidden fails here instead of leaving a reader with a
refusal.

Commands are read where they are code: a fenced block's lines (a ``\\`` continues a line, a ``#``
starts a comment), an inline code span, a shell script's line; a command ends at ``&&``, ``;``,
``|`` or the end of its span."""

from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path

import pytest

from dptune.bench._gpu import build_gpu_parser
from dptune.bench._main import build_bench_parser
from dptune.bench._sweep import build_sweep_parser
from dptune.cli._tree import build_parser

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN = [ROOT / "README.md", ROOT / "reports" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SCRIPTS = [*sorted((ROOT / "tools").glob("*.sh")), *sorted((ROOT / "experiments").glob("*.toml")),
           ROOT / ".ci" / "run"]

COMMAND = re.compile(r"(?<![\w./-])(dptune(?![\w.-])|python3? -m dptune\.bench)((?:\s+[a-z][\w-]*)?)(.*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
END = re.compile(r"&&|;|\||\$\(")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """The flags ``parser`` documents: not a removed or former name, not a hidden one."""
    return {s for a in parser._actions if a.help != argparse.SUPPRESS for s in a.option_strings}


@functools.cache
def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser, built once: dptune's and the benchmark's three."""
    return {"dptune": build_parser(), "bench": build_bench_parser(), "gpu": build_gpu_parser(),
            "sweep": build_sweep_parser()}


def _parser_of(tool: str, words: list[str]) -> tuple[argparse.ArgumentParser, str] | None:
    """The parser a command line's leading words select, and its name; ``None`` when the words
    are prose ("dptune keeps ..."), not a command."""
    if tool == "dptune":
        commands = _subparsers(_parsers()["dptune"])
        if not words:
            return _parsers()["dptune"], "dptune"
        if words[0] not in commands:
            return None
        parser = commands[words[0]]
        actions = _subparsers(parser)
        if actions and len(words) > 1 and words[1] in actions:
            return actions[words[1]], f"dptune {words[0]} {words[1]}"
        return parser, f"dptune {words[0]}"
    mode = words[0] if words else ""
    if mode == "gpu":
        return _parsers()["gpu"], "python -m dptune.bench gpu"
    if mode == "sweep":
        return _parsers()["sweep"], "python -m dptune.bench sweep"
    return _parsers()["bench"], "python -m dptune.bench"


def _named_parser(name: str) -> argparse.ArgumentParser:
    """The parser :func:`_parser_of` named ``name``."""
    if name.startswith("dptune"):
        selected = _parser_of("dptune", name.split()[1:])
    else:
        selected = _parser_of("python -m dptune.bench", name.split()[3:])
    assert selected is not None and selected[1] == name
    return selected[0]


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """``(line number, code)`` of every piece of code in ``path``: fenced lines (joined over a
    trailing ``\\``, comments cut), inline spans, or every line of a script or TOML file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if path.suffix != ".md":
        return list(enumerate(lines, 1))
    out: list[tuple[int, str]] = []
    fenced, held, start = False, "", 0
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            code = re.sub(r"\s#.*", "", line)
            if not held:
                start = n
            if code.rstrip().endswith("\\"):
                held += code.rstrip()[:-1] + " "
                continue
            out.append((start, held + code))
            held = ""
        else:
            out += [(n, span) for span in re.findall(r"`([^`]+)`", line)]
    return out


def documented_commands() -> list[tuple[str, str, str]]:
    """``(where, parser name, flag)`` of every flag of every documented command."""
    found = []
    for path in MARKDOWN + SCRIPTS:
        for n, code in _code_lines(path):
            for segment in END.split(code):
                m = COMMAND.search(segment)
                if m is None:
                    continue
                tail = m.group(2) + m.group(3)
                words = []
                for token in tail.split()[:2]:
                    if not re.fullmatch(r"[a-z][\w-]*", token):
                        break
                    words.append(token)
                tool = "dptune" if m.group(1) == "dptune" else "python -m dptune.bench"
                selected = _parser_of(tool, words)
                if selected is None:
                    continue
                parser, name = selected
                for flag in FLAG.findall(tail):
                    found.append((f"{path.relative_to(ROOT)}:{n}", name, flag))
    return found


def test_the_docs_commands_are_found():
    found = documented_commands()
    names = {name for _, name, _ in found}
    assert {"dptune run", "dptune analyze", "dptune slices", "dptune seeds", "dptune dp",
            "dptune data synth", "python -m dptune.bench", "python -m dptune.bench gpu"} <= names
    assert len(found) > 100


def test_every_documented_flag_exists():
    unknown = [f"{where}: {name} has no {flag}" for where, name, flag in documented_commands()
               if flag not in _options(_named_parser(name))]
    assert not unknown, "\n".join(unknown)


@pytest.mark.parametrize("code, flags", [
    ("dptune slices results/x --out r", {("dptune slices", "--out")}),
    ("dptune data synth --preset amazon-movies --out a.csv",
     {("dptune data synth", "--preset"), ("dptune data synth", "--out")}),
    ("dptune run a.toml --jobs 2 && dptune analyze r --pairs 25",
     {("dptune run", "--jobs"), ("dptune analyze", "--pairs")}),
    ("python -m dptune.bench gpu --simulate", {("python -m dptune.bench gpu", "--simulate")}),
    ("python -m dptune.bench --small", {("python -m dptune.bench", "--small")}),
    ("python3 -m dptune.bench gpu $ds --out x", {("python -m dptune.bench gpu", "--out")}),
    ("dptune keeps --every value", set()),
])
def test_a_command_line_is_read(tmp_path, monkeypatch, code, flags):
    doc = tmp_path / "x.sh"
    doc.write_text(code + "\n")
    here = sys.modules[__name__]
    monkeypatch.setattr(here, "MARKDOWN", [])
    monkeypatch.setattr(here, "SCRIPTS", [doc])
    monkeypatch.setattr(here, "ROOT", tmp_path)
    assert {(name, flag) for _, name, flag in documented_commands()} == flags
