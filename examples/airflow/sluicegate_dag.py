"""A minimal Airflow DAG for one sluicegate contract (Airflow 2.x TaskFlow; not run in CI).

sluicegate's exit code says what a scheduler should do (docs/exit-codes.md):

    0  passed (or warned)                     -> success
    4  upstream not ready (source.ready_when) -> retry later
    5  another run of the contract is live    -> retry later
    1  gate failed (bad data: quarantine and facts are published, clean rows are not)
    2  contract or usage error
    3  ledger violation (nothing published)   -> fail now, no retry: a person must look

So the task retries on 4 and 5 only, and fails without retrying on 1, 2 and 3
(``AirflowFailException``). ``max_active_runs=1`` keeps Airflow from starting two runs
of the DAG at once; sluicegate's writer lock refuses a second concurrent run anyway.
After a failure, ``sluicegate facts attention CONTRACT`` lists what failed and whom to
ask; rerunning the same date (Clear in the UI) replaces that date's outputs.
"""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta

import pendulum
from airflow.decorators import dag, task
from airflow.exceptions import AirflowException, AirflowFailException

CONTRACT = "/opt/pipelines/contracts/retail_sales.yml"  # adjust to your deployment
SLUICEGATE = "sluicegate"  # the console script of the environment sluicegate is installed in
RETRY_LATER = {
    4: "upstream not ready",
    5: "another run of this contract is in progress",
    70: "sluicegate internal error (see the task log; retried in case the environment was the cause)",
}


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 24, "retry_delay": timedelta(minutes=15)},
    tags=["sluicegate", "data-quality"],
)
def sluicegate_retail_sales():
    @task
    def run_contract(ds: str | None = None) -> dict:
        """Run the contract for the DAG run's logical date; map the exit code."""
        proc = subprocess.run(
            [SLUICEGATE, "run", CONTRACT, "--logical-date", ds, "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        print(proc.stderr)  # progress and messages go to the task log
        if proc.returncode == 0:
            metrics = json.loads(proc.stdout)
            return {"run_id": metrics["run_id"], "status": metrics["status"]}
        if proc.returncode in RETRY_LATER:
            raise AirflowException(f"exit {proc.returncode}: {RETRY_LATER[proc.returncode]}")
        raise AirflowFailException(
            f"sluicegate exited {proc.returncode}; see `sluicegate facts attention {CONTRACT}`"
        )

    run_contract()


sluicegate_retail_sales()
