"""After a run: alerts (apprise) and OpenLineage events. Neither changes a verdict."""
