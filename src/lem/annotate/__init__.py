"""POS / NER annotation into one word-level format shared by every backend (see `schema.py`)."""
