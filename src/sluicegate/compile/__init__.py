"""Contract → sqlglot expression trees. Pure functions; the dialect is a parameter.

Nothing here executes SQL or imports an engine driver: engines render and run what
these functions build.
"""
