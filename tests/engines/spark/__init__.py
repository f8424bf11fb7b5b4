"""Tests of the Spark engine alone (its session, warehouse, stream, crash recovery); the
behaviour both engines share is in ../conformance/."""
