"""Built-in task definitions (YAML data, no code)."""
