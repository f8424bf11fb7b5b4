"""engines/side_by_side.py: calls at once on threads, results in order, no call left
running behind an error (a failed commit must not leave a publish going on)."""

from __future__ import annotations

import threading
import time

import pytest

from sluicegate.engines.side_by_side import side_by_side


def test_side_by_side_finishes_every_call_before_raising():
    done: list[int] = []

    def ok(i: int) -> int:
        time.sleep(0.05)
        done.append(i)
        return i

    def boom() -> int:
        raise ValueError("boom")

    assert side_by_side([lambda i=i: ok(i) for i in range(5)]) == [0, 1, 2, 3, 4]
    done.clear()
    with pytest.raises(ValueError, match="boom"):
        side_by_side([boom, *[lambda i=i: ok(i) for i in range(3)]])
    assert sorted(done) == [0, 1, 2]


def test_side_by_side_runs_the_calls_at_once():
    """Two calls that each wait for the other can only both finish on two threads."""
    both = threading.Barrier(2, timeout=5)

    def meet() -> str:
        both.wait()
        return "met"

    assert side_by_side([meet, meet]) == ["met", "met"]
