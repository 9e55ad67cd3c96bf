"""dptune: which metric to tune with, and which hyperparameters matter.

Pipeline (data flows one way): data -> split -> sweep(models, metrics) -> store -> dp -> report.
"""

__version__ = "0.1.0"
