"""OpenLineage run events: START before a run, COMPLETE or FAIL after it.

The events are built with the ``openlineage-python`` client's own classes and sent by its
HTTP transport, so what a Marquez (or any OpenLineage consumer) receives is exactly what
the spec's generated classes serialize. The source is the input dataset, with the
data-quality facets (its row count, and one assertion per rule and built-in reason:
passed when no row failed it); the clean, quarantine and duplicates tables are the
outputs, each with its row count. The sluicegate run id, logical date and verdict ride
as run tags; the OpenLineage run id is a UUID made once per invocation (the spec wants a
UUID; sluicegate's run id is a digest of the input, computed only after binding).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ..contract.loader import LoadedContract

PRODUCER = "https://github.com/sluicegate/sluicegate"


@dataclass
class LineageRun:
    """One invocation's OpenLineage identity: the run UUID and the START event's time."""

    run_uuid: str
    started: dt.datetime
    start_error: str | None = None  # the START event could not be sent


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _client(loaded: LoadedContract) -> Any:
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    spec = loaded.contract.lineage
    assert spec is not None
    config = HttpConfig(
        url=spec.url,
        endpoint=spec.endpoint,
        timeout=spec.timeout_seconds,
        # one retry: a lineage server that is down must not hold a pipeline for minutes
        retry={"total": 1, "read": 1, "connect": 1, "backoff_factor": 0.1},
    )
    return OpenLineageClient(transport=HttpTransport(config))


def _job(loaded: LoadedContract) -> Any:
    from openlineage.client.event_v2 import Job

    spec = loaded.contract.lineage
    assert spec is not None
    return Job(namespace=spec.namespace, name=loaded.contract.name)


def _source(loaded: LoadedContract) -> str:
    return str(loaded.resolve_path(loaded.contract.source.path))


def start_event(loaded: LoadedContract, run: LineageRun) -> Any:
    """The START event: the job, the run UUID, the source as the input."""
    from openlineage.client.event_v2 import InputDataset, Run, RunEvent, RunState
    from openlineage.client.facet_v2 import nominal_time_run

    spec = loaded.contract.lineage
    assert spec is not None
    nominal = f"{loaded.logical_date}T00:00:00Z"
    return RunEvent(
        eventType=RunState.START,
        eventTime=run.started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        run=Run(
            runId=run.run_uuid,
            facets={"nominalTime": nominal_time_run.NominalTimeRunFacet(nominalStartTime=nominal)},
        ),
        job=_job(loaded),
        inputs=[InputDataset(namespace="file", name=_source(loaded))],
        producer=PRODUCER,
    )


def end_event(loaded: LoadedContract, run: LineageRun, metrics: dict[str, Any]) -> Any:
    """COMPLETE (pass, warn) or FAIL (fail, ledger violation), with the quality facets."""
    from openlineage.client.event_v2 import InputDataset, OutputDataset, Run, RunEvent, RunState
    from openlineage.client.facet_v2 import (
        data_quality_assertions_dataset,
        data_quality_metrics_input_dataset,
        error_message_run,
        output_statistics_output_dataset,
        tags_run,
    )

    spec = loaded.contract.lineage
    assert spec is not None
    status = str(metrics.get("status"))
    led = metrics.get("ledger") or {}
    red = loaded.redactor
    assertions = [
        data_quality_assertions_dataset.Assertion(
            assertion=name, success=int(r.get("failed") or 0) == 0, severity=r.get("on_fail")
        )
        for name, r in (metrics.get("rules") or {}).items()
    ] + [
        data_quality_assertions_dataset.Assertion(assertion=name, success=int(n or 0) == 0)
        for name, n in (metrics.get("builtin") or {}).items()
    ]
    files = (metrics.get("input") or {}).get("files") or []
    source = InputDataset(
        namespace="file",
        name=_source(loaded),
        inputFacets={
            "dataQualityMetrics": data_quality_metrics_input_dataset.DataQualityMetricsInputDatasetFacet(
                columnMetrics={},
                rowCount=int(led.get("raw") or 0),
                bytes=sum(int(f.get("size") or 0) for f in files),
                fileCount=len(files),
            )
        },
        facets={
            "dataQualityAssertions": data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
                assertions=assertions
            )
        },
    )
    outputs_spec = metrics.get("outputs") or {}
    warehouse = str(outputs_spec.get("warehouse") or "")
    rows = {
        "clean": int(metrics.get("clean_published") or 0),
        "quarantine": int(led.get("quarantined") or 0),
        "duplicates": int(led.get("duplicates") or 0),
    }
    outputs = [
        OutputDataset(
            namespace=f"file://{warehouse}",
            name=str(outputs_spec.get(role) or role),
            outputFacets={
                "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                    rowCount=n
                )
            },
        )
        for role, n in rows.items()
    ]
    failed = status in ("fail", "ledger_violation")
    facets: dict[str, Any] = {
        "tags": tags_run.TagsRunFacet(
            tags=[
                tags_run.TagsRunFacetFields(key=k, value=str(v), source="SLUICEGATE")
                for k, v in (
                    ("sluicegate_run_id", metrics.get("run_id")),
                    ("logical_date", metrics.get("logical_date")),
                    ("status", status),
                    ("engine", metrics.get("engine")),
                )
            ]
        )
    }
    if failed:
        levels = (metrics.get("gate") or {}).get("levels") or []
        message = metrics.get("error") or "; ".join(
            f"{lv['check']}: {lv['detail']}" for lv in levels if lv.get("status") == "fail"
        )
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=red(message or status), programmingLanguage="PYTHON"
        )
    return RunEvent(
        eventType=RunState.FAIL if failed else RunState.COMPLETE,
        eventTime=_now(),
        run=Run(runId=run.run_uuid, facets=facets),
        job=_job(loaded),
        inputs=[source],
        outputs=outputs,
        producer=PRODUCER,
    )


def new_run() -> LineageRun:
    from openlineage.client.uuid import generate_new_uuid

    return LineageRun(run_uuid=str(generate_new_uuid()), started=dt.datetime.now(dt.UTC))


def emit(loaded: LoadedContract, event: Any) -> None:
    """Send one event; raises whatever the transport raises (the caller records it)."""
    _client(loaded).emit(event)
