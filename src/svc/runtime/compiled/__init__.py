"""The request path, compiled ahead of time with mypyc where a C compiler exists (svc.native).

Every module in this folder, and only these, is compiled (svc.native.MODULES lists them); each
stays plain Python that runs as it is where no build exists. Together they take a request from
bytes to the answer: protocol.py (HTTP/1.1 parsing and framing, no sockets), routing.py (the
route table), answers.py (each route's answer strategy, chosen at start-up), binding.py (path, query and body values into arguments),
headers.py (a handler's `Headers`), responses.py and custom_response.py (the answer's bytes),
connection.py (the asyncio Protocol that drives one connection) and eager.py (running a handler
without an asyncio Task). Code that exists only because it is faster than the obvious version
says which function it mirrors.
"""
