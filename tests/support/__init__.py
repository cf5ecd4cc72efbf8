"""What the tests share: fakes, builders, runners and servers, imported as `tests.support.<module>`.

The tests by kind sit beside this package: tests/core (the pure core), tests/cli (the CLI and the
HTTP adapter against an in-memory fake or respx), tests/functions (the function files: the agent
pipe and the filters) and tests/e2e (against real servers started by the suite).
"""
