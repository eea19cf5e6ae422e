"""The query engine: ``loglikelihood``, ``next_token`` and ``similarity`` queries of multiple-choice tasks, and the
token-level capability."""
