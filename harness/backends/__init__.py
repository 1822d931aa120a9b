"""Live models behind the one Model base (harness.model): an OpenAI-compatible server
(completions or chat), llama.cpp's server started by harness; `spec.model_from_spec` picks one by name."""
