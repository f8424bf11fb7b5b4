"""OpenLineage run events sent to a receiver on loopback and read back through the
openlineage-python client's own classes (their validators check the run UUID, the event
time and each facet's schema URL); the rebuilt event must serialize to exactly what was
received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    data_quality_assertions_dataset as dqa,
)
from openlineage.client.facet_v2 import (
    data_quality_metrics_input_dataset as dqm,
)
from openlineage.client.facet_v2 import (
    error_message_run,
    nominal_time_run,
    output_statistics_output_dataset,
    tags_run,
)
from openlineage.client.serde import Serde

import sluicegate

from .conftest import orders_contract


def _facet(cls: type, doc: dict[str, Any], **fields: Any) -> Any:
    f = cls(**fields)
    f._producer = doc["_producer"]
    assert doc["_schemaURL"] == f._schemaURL, f"{cls.__name__}: wrong schema URL"
    return f


def rebuild(doc: dict[str, Any]) -> RunEvent:
    """The received JSON as the client's classes (unknown facets would fail here)."""
    run_facets: dict[str, Any] = {}
    for name, f in (doc["run"].get("facets") or {}).items():
        if name == "nominalTime":
            run_facets[name] = _facet(
                nominal_time_run.NominalTimeRunFacet, f, nominalStartTime=f["nominalStartTime"]
            )
        elif name == "tags":
            tags = [tags_run.TagsRunFacetFields(**t) for t in f["tags"]]
            run_facets[name] = _facet(tags_run.TagsRunFacet, f, tags=tags)
        elif name == "errorMessage":
            run_facets[name] = _facet(
                error_message_run.ErrorMessageRunFacet,
                f,
                message=f["message"],
                programmingLanguage=f["programmingLanguage"],
            )
        else:
            raise AssertionError(f"unexpected run facet {name}")
    inputs = []
    for d in doc.get("inputs") or []:
        facets, input_facets = {}, {}
        if "dataQualityAssertions" in (d.get("facets") or {}):
            f = d["facets"]["dataQualityAssertions"]
            facets["dataQualityAssertions"] = _facet(
                dqa.DataQualityAssertionsDatasetFacet,
                f,
                assertions=[dqa.Assertion(**a) for a in f["assertions"]],
            )
        if "dataQualityMetrics" in (d.get("inputFacets") or {}):
            f = d["inputFacets"]["dataQualityMetrics"]
            fields = {k: v for k, v in f.items() if not k.startswith("_")}
            input_facets["dataQualityMetrics"] = _facet(
                dqm.DataQualityMetricsInputDatasetFacet, f, **fields
            )
        inputs.append(
            InputDataset(
                namespace=d["namespace"], name=d["name"], facets=facets, inputFacets=input_facets
            )
        )
    outputs = [
        OutputDataset(
            namespace=d["namespace"],
            name=d["name"],
            outputFacets={
                "outputStatistics": _facet(
                    output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet,
                    d["outputFacets"]["outputStatistics"],
                    rowCount=d["outputFacets"]["outputStatistics"]["rowCount"],
                )
            },
        )
        for d in doc.get("outputs") or []
    ]
    event = RunEvent(
        eventType=RunState(doc["eventType"]),
        eventTime=doc["eventTime"],
        run=Run(runId=doc["run"]["runId"], facets=run_facets),
        job=Job(namespace=doc["job"]["namespace"], name=doc["job"]["name"]),
        inputs=inputs,
        outputs=outputs,
        producer=doc["producer"],
    )
    assert doc["schemaURL"] == event.schemaURL
    assert Serde.to_dict(event) == doc, "the event is not what the client's classes make"
    return event


def _lineage(url: str) -> str:
    return f"lineage:\n  url: http://{url}\n  namespace: tests\n"


def test_start_then_complete_with_quality_facets(tmp_path: Path, receiver) -> None:
    contract = orders_contract(tmp_path / "o", _lineage(receiver.url))
    result = sluicegate.run(contract, logical_date="2024-01-31")
    assert result.status == "warn"
    assert [p for p, _d in receiver.posts] == ["/api/v1/lineage"] * 2
    start, end = (rebuild(doc) for _p, doc in receiver.posts)
    assert start.eventType == RunState.START and end.eventType == RunState.COMPLETE
    assert start.run.runId == end.run.runId
    assert end.job.namespace == "tests" and end.job.name == "orders"
    tags = {t.key: t.value for t in end.run.facets["tags"].tags}
    assert tags["sluicegate_run_id"] == result.run_id and tags["status"] == "warn"
    # the data-quality facets are the run's numbers
    source = end.inputs[0]
    assert source.inputFacets["dataQualityMetrics"].rowCount == result.ledger.raw
    assertions = {a.assertion: a.success for a in source.facets["dataQualityAssertions"].assertions}
    for name, rule in result.metrics["rules"].items():
        assert assertions[name] is (rule["failed"] == 0)
    rows = {o.name: o.outputFacets["outputStatistics"].rowCount for o in end.outputs}
    assert rows == {
        "good_orders": result.metrics["clean_published"],
        "quarantine": result.ledger.quarantined,
        "order_duplicates": result.ledger.duplicates,
    }
    fact = next(f for f in result.facts if f["check_id"] == "notify:lineage")
    assert fact["status"] == "pass"


def test_failed_gate_sends_fail_with_the_reason(tmp_path: Path, receiver) -> None:
    contract = orders_contract(tmp_path / "o", _lineage(receiver.url), fail_above=0.1)
    result = sluicegate.run(contract, logical_date="2024-01-31")
    assert result.exit_code == 1
    end = rebuild(receiver.posts[-1][1])
    assert end.eventType == RunState.FAIL
    assert "quarantine_share" in end.run.facets["errorMessage"].message


def test_lineage_server_down_is_a_fact_not_a_failure(tmp_path: Path, receiver) -> None:
    receiver.status = 503
    contract = orders_contract(tmp_path / "o", _lineage(receiver.url))
    result = sluicegate.run(contract, logical_date="2024-01-31")
    assert (result.status, result.exit_code) == ("warn", 0)
    fact = next(f for f in result.facts if f["check_id"] == "notify:lineage")
    assert fact["status"] == "warn" and "not delivered" in fact["detail"]
