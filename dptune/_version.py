"""The package version, in a module of its own so that any layer can record it (the manifest
does) without importing the package front door."""

__version__ = "0.1.0"
