"""The version of the workflow and its `lem` package (one version: pyproject.toml, CITATION.cff), here at the
bottom layer so that lem.core can name the code a job ran (lem.core.code_identity); `lem.__version__` is it."""

__version__ = "0.1.0"
