"""Watching a training run: hooks, runtime monitors and the run report."""
