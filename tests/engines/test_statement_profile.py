"""``run --profile`` on both engines: every call that makes the engine work, timed, with
its stage; on Spark the CPU column counts the driver JVM's CPU (where the work is),
reconciled with the JVM's own account of its CPU (``ProcessHandle``)."""

from __future__ import annotations

import time

from tests.engines.test_publish import feed, govern_contract, run, write_rows


def _jvm_cpu_seconds(jvm) -> float:  # noqa: ANN001 - a py4j gateway
    """The JVM's CPU as the JVM itself reports it (the engine reads /proc instead)."""
    return jvm.java.lang.ProcessHandle.current().info().totalCpuDuration().get().toNanos() / 1e9


def test_profile_times_each_stage_and_the_publish(tmp_path, engine, request):
    contract = govern_contract(tmp_path, engine=engine)
    write_rows(tmp_path / "data.json", feed(3000, bad=40, dups=25))
    if engine == "spark":
        spark = request.getfixturevalue("spark")
        jvm = spark.sparkContext._jvm  # noqa: SLF001
        jvm_before = _jvm_cpu_seconds(jvm)
    py_before = time.process_time()
    result = run(contract, engine_name=engine, engine_options={"profile": True})
    py_used = time.process_time() - py_before
    assert result.exit_code == 0, result.metrics.get("error")
    prof = result.metrics["profile"]
    stages = {p["stage"] for p in prof}
    assert {"read", "dedupe", "route", "publish"} <= stages
    assert all(p["wall_s"] >= 0 and p["cpu_s"] >= 0 and p["sql"] for p in prof)
    assert sum(p["wall_s"] for p in prof) <= result.metrics["timings"]["total"]
    publish = [p["sql"] for p in prof if p["stage"] == "publish"]
    assert any(s.startswith("INSERT INTO") or s.startswith("CREATE") for s in publish)
    cpu = sum(p["cpu_s"] for p in prof)
    if engine == "spark":
        assert any(s.startswith("(commit: publish") and "delta" in s for s in publish)
        jvm_used = _jvm_cpu_seconds(jvm) - jvm_before
        # the timed calls hold most of the JVM's work and no more CPU than the process
        # tree spent; Python alone (what a profile without the JVM would count) is far less
        assert cpu <= jvm_used + py_used + 0.5
        assert cpu >= 0.5 * jvm_used, (cpu, jvm_used)
        assert cpu > 2 * py_used, (cpu, py_used)
    else:
        assert cpu <= py_used + 0.5
