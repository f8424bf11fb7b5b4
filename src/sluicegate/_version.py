"""The package version, in a leaf module: layers below the public API (run/metrics.py,
report/build.py) read it without importing ``sluicegate/__init__.py``, which names the API."""

__version__ = "0.1.0"
