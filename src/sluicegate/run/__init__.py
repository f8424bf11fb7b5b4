"""Orchestration: bind → read → dedupe → route → publish → report."""
