"""Library errors: each carries its context and says what to do.

The CLI maps every :class:`SluiceError` to a message and an exit code in one place
(``sluicegate.cli.main``); nothing else in the library decides exit codes.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass, field

# Exit codes. Schedulers key on these; they are documented in docs/exit-codes.md.
EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_CONTRACT = 2
EXIT_LEDGER = 3
EXIT_NOT_READY = 4
EXIT_LOCKED = 5
#: sluicegate itself failed (a bug, or the environment broke under it: disk full, a
#: read-only filesystem). Not "gate failed": schedulers may retry it and must alert.
#: 70 is EX_SOFTWARE in sysexits.h.
EXIT_INTERNAL = 70
EXIT_SERVE = 6  # `sluicegate serve` could not load a target (a run's verdict never changes)


class SluiceError(Exception):
    """Base of every error sluicegate raises on purpose."""

    exit_code: int = EXIT_CONTRACT

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        """One human message: what went wrong, then what to do."""
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


@dataclass
class ContractProblem:
    """One problem in a contract, located by key path and (where known) line."""

    path: str
    message: str
    line: int | None = None
    suggestion: str | None = None
    file: str | None = None  # set when the problem is in another file (a rules_file)

    def render(self, file: str) -> str:
        file = self.file or file
        where = f"{file}:{self.line}" if self.line else file
        key = f" [{self.path}]" if self.path else ""
        text = f"{where}{key}: {self.message}"
        if self.suggestion:
            text += f" (did you mean '{self.suggestion}'?)"
        return text


class ContractError(SluiceError):
    """The contract cannot be used. Names the file, the key path, the line and a fix."""

    exit_code = EXIT_CONTRACT

    def __init__(self, file: str, problems: list[ContractProblem]) -> None:
        self.file = file
        self.problems = problems
        super().__init__("\n".join(p.render(file) for p in problems))

    @classmethod
    def one(
        cls,
        file: str,
        path: str,
        message: str,
        *,
        line: int | None = None,
        suggestion: str | None = None,
    ) -> ContractError:
        return cls(file, [ContractProblem(path, message, line, suggestion)])


class UsageError(SluiceError):
    """The command line asked for something impossible."""

    exit_code = EXIT_CONTRACT


class UnknownNameError(UsageError):
    """A name argument (``--reason``, ``--check``, ``--status``, a table or rule) that names
    nothing: exit 2 with the closest valid name, never an empty result."""

    def __init__(
        self,
        option: str,
        value: str,
        known: list[str],
        *,
        what: str = "name",
        suggestion: str | None = None,
    ) -> None:
        self.option = option
        self.value = value
        self.known = sorted(known)
        self.suggestion = suggestion
        did = f" (did you mean '{self.suggestion}'?)" if self.suggestion else ""
        listed = ", ".join(self.known[:12]) + (", …" if len(self.known) > 12 else "")
        super().__init__(
            f"{option} '{value}': no such {what}{did}",
            hint=f"known: {listed}" if self.known else f"there is no {what} to choose from yet",
        )


class InputError(SluiceError):
    """The input cannot be bound (missing path, unreadable file)."""

    exit_code = EXIT_CONTRACT


class EngineUnavailable(SluiceError):
    """An optional engine is not installed; the hint has the install line."""

    exit_code = EXIT_CONTRACT


@dataclass
class LedgerViolation:
    """One way the ledger failed to balance."""

    check: str
    detail: str


class LedgerError(SluiceError):
    """raw != clean + quarantined + duplicates, or the lineage sets overlap."""

    exit_code = EXIT_LEDGER

    def __init__(self, violations: list[LedgerViolation]) -> None:
        self.violations = violations
        super().__init__(
            "ledger does not balance: " + "; ".join(f"{v.check}: {v.detail}" for v in violations),
            hint="nothing was published; this is a bug in sluicegate or a changed input — "
            "rerun, and report it with the run metrics JSON if it persists",
        )


class NotReadyError(SluiceError):
    """The upstream has not signalled readiness (``source.ready_when``)."""

    exit_code = EXIT_NOT_READY


class LockedError(SluiceError):
    """Another run of the same contract holds the writer lock."""

    exit_code = EXIT_LOCKED


class EnvironmentFailure(SluiceError):
    """The machine broke under a run (disk full, filesystem read-only): exit 70 like a bug,
    not 2 — the contract is fine and a retry helps once the environment is repaired."""

    exit_code = EXIT_INTERNAL


#: strerror texts of the environment faults an engine reports inside its own messages
ENVIRONMENT_FAULTS = tuple(
    os.strerror(e) for e in (errno.ENOSPC, errno.EROFS, errno.EIO, errno.EDQUOT)
)


MIN_SECRET_CHARS = 8


def spellings(value: str) -> set[str]:
    """The forms a secret takes in output: as is, JSON-escaped (``"``, ``\\``, non-ASCII
    as ``\\uXXXX``), and its repr — each must be redacted, not only the raw text."""
    out = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    out.add(repr(value)[1:-1])
    return {s for s in out if len(s) >= MIN_SECRET_CHARS}


class ServeError(SluiceError):
    """A serving target could not be loaded; nothing of the load is visible there."""

    exit_code = EXIT_SERVE


@dataclass
class Redactor:
    """Replaces secret values with ``***`` wherever text leaves the library."""

    secrets: set[str] = field(default_factory=set)

    def __call__(self, text: str) -> str:
        every = {form for s in self.secrets for form in spellings(s)}
        for s in sorted(every, key=len, reverse=True):
            if s:
                text = text.replace(s, "***")
        return text
