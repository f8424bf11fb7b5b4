"""The model stage as sqlglot trees: SCD2 dimensions, as-of facts,
marts and the partitioned fact export.

Pure functions of the contract, like the rest of ``compile``: the dialect is a render
parameter, engines run what is built here. ``run/model.py`` orchestrates.
"""
