"""Tests of the DuckDB engine alone (its file lock, crash consistency of its publish);
the behaviour both engines share is in ../conformance/."""
