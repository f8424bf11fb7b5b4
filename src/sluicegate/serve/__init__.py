"""Serving: load what a run published into PostgreSQL (docs/serving.md)."""

from __future__ import annotations

from .load import TableLoad, TargetResult, serve, serve_target

__all__ = ["TableLoad", "TargetResult", "serve", "serve_target"]
