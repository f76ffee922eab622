"""Comparing two profiles: being written."""
