"""Findings and how they are shown."""
