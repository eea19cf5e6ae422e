"""A plugin-based harness that compares the variability of model outputs with human production variability."""

__version__ = "0.1.0"
