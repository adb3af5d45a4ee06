"""The static engine: reads code, never imports torch."""
