"""Run metrics, progress events and human output. Core code reports here; the CLI renders."""
