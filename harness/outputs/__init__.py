"""Outputs: a run's response store, its output folder's layout and lock, and the results files (layer 3, so that
the public API can export the response store)."""
