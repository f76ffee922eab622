"""pytest helpers for performance regressions: being written."""
