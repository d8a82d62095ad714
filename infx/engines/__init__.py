"""Engines: typed layered recipes, engine adapters (vLLM, SGLang, TRT-LLM), launch rendering,
runtimes, and the embedded default (real vLLM on CPU serving a tiny model built offline)."""
