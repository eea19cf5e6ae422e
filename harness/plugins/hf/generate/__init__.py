"""The generation engine: ``generate``, many samples per prompt in one batch."""
