"""The ``engine`` parameter shared by the publish, DLQ, incremental and facts tests."""

from __future__ import annotations

import pytest

from tests.engines.engine_params import ENGINES, apply_gaps


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "gap(engine, reason, raises=Exc): a known difference of one engine "
        "(a strict xfail there, expecting exactly Exc)",
    )


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The engine under test (``duckdb`` or ``spark``), its ``gap`` markers applied."""
    name = request.param
    apply_gaps(request, name)
    if name == "spark":
        request.getfixturevalue("spark")  # the run's one SparkSession, started on demand
    return name
