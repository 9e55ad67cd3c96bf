"""Studies beyond the paper: the split-seed study and the user-slice study."""

