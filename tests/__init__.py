"""The test suite. A package so helpers import as `tests.helpers.<module>` from any test."""
