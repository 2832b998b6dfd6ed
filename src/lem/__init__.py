"""Linguistic Entity Masking (LEM) pipeline: the library behind the Snakemake workflow."""

from lem.core.version import __version__

__all__ = ["__version__"]
