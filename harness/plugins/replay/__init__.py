"""``--model replay:NAME``: answer requests with outputs a model produced elsewhere (``docs/importing.md``)."""
