"""Linguistic Entity Masking (LEM) pipeline: the library behind the Snakemake workflow."""

__version__ = "0.1.0"
