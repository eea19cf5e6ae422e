"""The registry: the plugin manager and what is installed, and how a task file becomes a checked task (layer 3)."""
