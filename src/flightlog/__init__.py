"""flightlog: every ML run carries its own evidence."""

__version__ = "0.1.0"
