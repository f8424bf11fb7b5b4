"""The ``alerts:`` and ``lineage:`` sections: who is told about a run, and where its
OpenLineage events go.

Both are optional and never change a run's verdict: a notifier that fails is recorded as
a fact (``notify/record.py``), not raised. A URL takes no ``${secret:…}`` (it is shown in
facts and messages; contract/secret.py lists the keys that accept one).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: What a run can alert on (docs/alerts.md): the gate's verdicts, a ledger violation, a
#: stale source (the freshness check not passing) and the DLQ growing past a threshold.
AlertEvent = Literal["fail", "warn", "ledger_violation", "stale", "dlq_growth"]
ALERT_EVENTS: tuple[str, ...] = ("fail", "warn", "ledger_violation", "stale", "dlq_growth")

_DURATION = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")


def duration_seconds(text: str) -> int:
    """``90s``, ``30m``, ``1h``, ``2d`` as seconds (the freshness section's syntax)."""
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(f"'{text}' must look like 90s, 30m, 1h or 2d")
    return int(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Alert(_Strict):
    """One notification target: an apprise URL (``slack://…``, ``msteams://…``,
    ``mailto://…``, ``json://host/path`` for a webhook) and the events it wants."""

    url: str = Field(min_length=3)
    on: list[AlertEvent] = Field(default_factory=lambda: ["fail", "ledger_violation"])
    #: At most one alert per contract, event and check within this window.
    rate_limit: str = "1h"
    #: ``dlq_growth`` fires when a run adds more than this many rows to the DLQ inbox.
    dlq_growth_above: int = Field(default=0, ge=0)

    @field_validator("url")
    @classmethod
    def _has_scheme(cls, v: str) -> str:
        if "://" not in v:
            raise ValueError("an alert url needs a scheme, e.g. json://host/path or slack://…")
        return v

    @field_validator("rate_limit")
    @classmethod
    def _duration(cls, v: str) -> str:
        duration_seconds(v)
        return v.strip()

    @property
    def rate_limit_seconds(self) -> int:
        return duration_seconds(self.rate_limit)


class Lineage(_Strict):
    """OpenLineage run events (START, then COMPLETE or FAIL) POSTed to ``url``."""

    url: str = Field(pattern=r"^https?://")
    endpoint: str = "api/v1/lineage"
    namespace: str = "sluicegate"
    timeout_seconds: float = Field(default=5.0, gt=0, le=120)
