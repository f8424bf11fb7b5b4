"""sluicegate: a data-quality gate that routes every record to exactly one place and proves it."""

__version__ = "0.1.0"
