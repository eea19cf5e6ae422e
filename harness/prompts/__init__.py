"""Prompts: how a generation input and a multiple-choice item are shown to a model (layer 1)."""
