"""svc: a small statically typed backend language, its compiler `svcc` and its runtime.

`__version__` is the one place the version is written: pyproject.toml reads it (setuptools'
dynamic version), and so do `svcc --version`, the language server, the executables' build
cache and the `User-Agent` of outbound calls. tests/docs/test_version.py keeps the docs in step.
"""

__version__ = "0.4.0"
