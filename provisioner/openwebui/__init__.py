"""The Open WebUI adapter: the I/O seam, the package's one subpackage.

Everything that reaches an Open WebUI instance over HTTP, and only that: the client (the one
module that imports httpx), what each release needs (compat), reading the instance (observed,
drift), writing a plan (apply), and the admin token (token, token_file). The rest of the package
stays flat and never talks to the network (docs/architecture.md, "Layers").

Layer: adapter.
"""
