"""The README's "Your own data" and "Your own model" sections run as written.

Every fenced block of the two sections is executed in order, in a fresh directory holding a link
to the repository's ``grids/``: a block whose first line is ``# file: NAME`` is written to NAME,
a ``python`` block is executed, every ``dptune ...`` line of a ``bash`` block is run through the
command line's entry point and must exit 0.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pandas as pd
import pytest

from dptune.cli import main
from dptune.models._adapters import _REGISTRY

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def section_blocks(title: str) -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return FENCE.findall(text[start: end if end >= 0 else len(text)])


def run_blocks(blocks: list[tuple[str, str]]) -> list[str]:
    ran = []
    for lang, code in blocks:
        first = code.splitlines()[0]
        if first.startswith("# file: "):
            Path(first[len("# file: "):].strip()).write_text(code)
        elif lang == "python":
            exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
        elif lang == "bash":
            for line in code.splitlines():
                if line.startswith("dptune "):
                    assert main(shlex.split(line)[1:]) == 0, line
                    ran.append(line)
        else:
            pytest.fail(f"README block of unknown kind {lang!r}: {first}")
    return ran


@pytest.fixture
def readme_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    (tmp_path / "grids").symlink_to(ROOT / "grids")
    yield tmp_path
    sys.modules.pop("mymodels", None)
    _REGISTRY.pop("my-ease", None)


def test_readme_own_data_and_own_model_run_as_written(readme_dir):
    data_blocks = section_blocks("Your own data")
    model_blocks = section_blocks("Your own model")
    assert len(data_blocks) >= 3 and len(model_blocks) >= 4
    ran = run_blocks(data_blocks)
    assert any(cmd.startswith("dptune run my-data.toml") for cmd in ran)
    head = (readme_dir / "my-ratings.csv").read_text().splitlines()[0]
    assert head == "customer;product;stars"  # other column names, no timestamps
    man = json.loads((readme_dir / "results/my-data/manifest.json").read_text())
    assert man["split"]["method"] == "random" and not man["evaluation"]["implicit_feedback"]
    assert any("no timestamp column" in line for line in man["dataset"]["log"])
    assert (readme_dir / "reports/my-data/table3.csv").is_file()

    ran = run_blocks(model_blocks)
    assert any(cmd.startswith("dptune run my-model.toml") for cmd in ran)
    trials = pd.read_csv(readme_dir / "results/my-model/trials.csv")
    assert set(trials["algorithm"]) == {"ease", "mostpop"}
    # both models are deterministic: no noise floor was trained for either
    assert not (readme_dir / "results/my-model/noise_floor.parquet").exists() or not any(
        (readme_dir / "results/my-model/noise_floor.parquet").iterdir())
    dp = pd.read_csv(readme_dir / "reports/my-model/dp.csv")
    assert set(dp["algorithm"]) == {"ease"}  # MostPop has one configuration: no pair
