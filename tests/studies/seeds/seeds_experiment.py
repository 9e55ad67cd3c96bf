"""The tiny seeds experiment the seeds study's tests share, on the embedded data."""

from __future__ import annotations

from pathlib import Path


def tiny_seeds_experiment(tmp_path: Path, extra: str = "", bpr: bool = True) -> Path:
    """``tmp_path/tiny.toml``: UserKNN (k in 10, 20, 40) and, with ``bpr``, a 3 x 2 x 2 BPR-MF
    grid; ``extra`` (a ``[seeds]`` table) is appended."""
    (tmp_path / "knn.toml").write_text("[params.k]\nvalues = [10, 20, 40]\n")
    text = f"""
name = "tiny-seeds"
seed = 3
[split]
min_user_interactions = 5
[evaluation]
cutoffs = [1, 5, 10]
[analysis]
pairs = 5
[[algorithms]]
name = "userknn"
type = "userknn"
grid = "{tmp_path / 'knn.toml'}"
"""
    if bpr:
        (tmp_path / "bpr.toml").write_text(
            'family = "bpr-mf"\n[params.factors]\nvalues = [4, 8, 16]\n'
            "[params.iterations]\nvalues = [1, 2]\n[params.learning_rate]\nvalues = [0.05, 0.1]\n"
            '[derived]\nuser_reg = { from = "learning_rate", scale = 0.05 }\n'
            'item_reg = { from = "learning_rate", scale = 0.005 }\n')
        text += f'[[algorithms]]\nname = "bpr-mf"\ntype = "bpr-mf"\ngrid = "{tmp_path / "bpr.toml"}"\n'
    path = tmp_path / "tiny.toml"
    path.write_text(text + extra)
    return path
