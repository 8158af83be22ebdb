"""svc: a small statically typed backend language, its compiler `svcc` and its runtime."""

__version__ = "0.2.0"
