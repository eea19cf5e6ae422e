"""Words: the word rules applied alike to people's responses and to model outputs, where a word ends in scripts without
spaces, and the words of model replies (layer 1)."""
