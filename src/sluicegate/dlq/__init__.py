"""The dead-letter queue: inbox (the quarantine table), outbox, audit, fix and recycle.

* ``canonical`` / ``keys`` — the canonical row JSON and the ``_dlq_sk`` key (all engines);
* ``inbox`` — MERGE of a run's quarantined rows (called by ``run/publish.py``);
* ``store`` — an opened DLQ: list, show, the table names;
* ``lifecycle`` — operator fixes and marks (quarantined → fixed | rejected), audited;
* ``recycle`` — re-validate fixed rows through the contract: clean + outbox, or back;
* ``ledger`` — the run ledger extended with the DLQ statuses.

See ``docs/dlq.md``.
"""
