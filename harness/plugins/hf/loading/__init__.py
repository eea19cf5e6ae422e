"""Loading a Hugging Face model: what a name refers to, the hub or the local cache, packaged GGUF aliases, device, dtype
and batch size."""
