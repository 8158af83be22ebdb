"""Helpers shared by the tests, imported as `from tests.helpers.svc_process import start`.

They live in one package (not beside the tests, not in conftest.py) so any test folder can use
them without touching sys.path; pyproject.toml puts the repository root on pytest's path.
Some are also run as scripts in a subprocess (demo_app.py, ack_writer.py, large_program.py).
"""
