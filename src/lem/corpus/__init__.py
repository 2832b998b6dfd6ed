"""The embedded trilingual (en/si/ta) corpus: a seeded generator of text, gold tags and evaluation sets."""
