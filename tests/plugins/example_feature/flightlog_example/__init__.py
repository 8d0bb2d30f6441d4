"""An example flightlog feature (docs/plugins.md)."""
