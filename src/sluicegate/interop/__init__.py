"""Interoperability with other contract standards (ODCS v3: ``export odcs``, ``import odcs``)."""
