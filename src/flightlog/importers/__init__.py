"""Bringing runs recorded by other tools into flightlog (``flightlog import ...``)."""
