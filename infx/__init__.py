"""infx: an open LLM-inference benchmark platform."""

__version__ = "0.1.0"
