"""Data: the loader interface and the data root, where a data path points, the data sets ``harness data`` fetches, the
table readers and ``harness data inspect`` (layer 1)."""
