"""Issue 14 #10: the fact export removes only what it put there."""

from __future__ import annotations

from sluicegate.run.model import swap_partitions


def test_swap_keeps_empty_folders_it_did_not_create(tmp_path):
    final, staging = tmp_path / "export", tmp_path / ".export.staging" / "2024-01-02"
    (final / "notes" / "keep").mkdir(parents=True)  # an operator's empty folder
    (final / "year=2024" / "month=02").mkdir(parents=True)
    old = final / "year=2024" / "month=02" / "part-2024-01-02-0.parquet"
    old.write_bytes(b"old")  # this date's file in a partition the new export no longer has
    (staging / "year=2024" / "month=01").mkdir(parents=True)
    (staging / "year=2024" / "month=01" / "part-2024-01-02-0.parquet").write_bytes(b"new")
    out = swap_partitions(staging, final, "part-2024-01-02")
    assert out["stale_removed"] == 1 and not old.exists()
    assert not (final / "year=2024" / "month=02").exists()  # emptied by this export: gone
    assert (final / "notes" / "keep").is_dir()  # not ours: kept
    assert (final / "year=2024" / "month=01" / "part-2024-01-02-0.parquet").read_bytes() == b"new"
