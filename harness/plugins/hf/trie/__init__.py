"""The trie word engine: ``sample_words`` (many ancestral next words after one context, shared through a prefix trie)
and ``word_distribution`` (the exact next-word distribution)."""
