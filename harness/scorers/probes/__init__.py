"""Variability probes: distances between two texts on one level (words, syntax, meaning).

A probe turns texts into features once (``prepare``) and then gives pairwise distance matrices between lists of
texts (``distances``). The variability scorers (``harness.scorers.variability``) compare the distributions of those
distances between humans and models; probes know nothing about humans or models.
"""
