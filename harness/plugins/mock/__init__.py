"""The ``mock`` model adapter: deterministic answers to every request kind, for tests (see ``docs/mock-model.md``)."""
