"""Authoring: draft a contract from data (``sluicegate init``)."""
