"""POS / NER annotation into one word-level format shared by every backend (see `schema.py`)."""


class BackendError(RuntimeError):
    """An annotation backend that cannot run here (its package or model is missing): the message says what
    to install or where to put the model."""
