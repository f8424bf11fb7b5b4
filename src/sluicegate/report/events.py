"""Progress events: the core announces stages; a listener (the CLI) decides how to show them."""

from __future__ import annotations

from typing import Protocol


class Listener(Protocol):
    def stage(self, name: str, detail: str = "") -> None:
        """A stage started."""

    def finished(
        self, name: str, seconds: float, detail: str = "", records: int | None = None
    ) -> None:
        """A stage ended; ``records`` is how many records it handled, when it counts."""

    def notice(self, message: str) -> None:
        """Something the operator should see (drift, a warning)."""


class Silent:
    """The default listener: core code never prints."""

    def stage(self, name: str, detail: str = "") -> None:
        pass

    def finished(
        self, name: str, seconds: float, detail: str = "", records: int | None = None
    ) -> None:
        pass

    def notice(self, message: str) -> None:
        pass
