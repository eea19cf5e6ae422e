"""The ``openai`` model adapter: any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, TGI) over HTTP."""
