"""The svc runtime: the server, the database, the standard library that generated code calls.

Importing it puts the compiled (mypyc) request-path modules in place when a current build
exists (svc.native); otherwise every module runs as Python.
"""

from svc import native

native.install()
