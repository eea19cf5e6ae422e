"""Run: one run from its options to its scores, re-scoring a finished run, sweeps and imports (layer 5)."""
