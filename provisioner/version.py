"""The provision version: the one `provision --version` prints and every marker records.

A module of its own, importing nothing, so the pure core can name the version without loading
the package's lazy `__init__` (which exists for the public API and `provision --help`'s speed).

Layer: vocabulary.
"""

__version__ = "0.1.0"
