"""Scoring: the scorer interface and the metric type, scorer arguments, confidence intervals, answer classifiers and the
sentence encoders they share (layer 1)."""
