"""Outputs: a run's response store, its output folder's layout and lock, and the results files (layer 4)."""
