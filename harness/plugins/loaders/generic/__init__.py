"""Generic loaders: a task over any data set with many human productions per input, written in YAML alone.

One loader per instance type (``generic_cloze``, ``generic_generation``, ``generic_choice``) shares the pieces
here: :mod:`.table` reads local files and Hugging Face hub data sets through ``datasets``, :mod:`.fields` maps
columns (or sandboxed Jinja2 templates over them) to an instance's fields, :mod:`.human` reads the shapes human
productions come in, and :mod:`.normalise` applies a study's response normalisation. ``docs/your-data.md`` is the
user's guide.
"""
