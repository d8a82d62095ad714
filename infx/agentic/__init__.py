"""Agentic trace replay: weka-format traces (``trace``), synthetic traces (``synth``), their
distributions (``stats``), exact-length prompts from hash-id blocks (``prompts``), session-tree
replay with subagent fan-out (``replay``) and the BenchResult it yields (``measure``:
``run_agentic_point`` for the sweeps stage). See docs/agentic.md."""
