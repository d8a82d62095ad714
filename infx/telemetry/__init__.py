"""Telemetry: what the hardware and the engine did while a point was measured.

Samplers run next to each measurement (GPU power from ``nvidia-smi``/``amd-smi`` CSV loops, CPU package
energy from the Linux powercap/RAPL counters, the engine's Prometheus ``/metrics`` once a second); after
the load generator reports its throughput window (unix seconds on the same wall clock), the raw samples are
integrated over exactly that window with InferenceX's rules (``energy``) and summarised
(``engine_state``). Raw sample files land beside the point's records; the figures go in ``result.json``
(``extra.telemetry``) and from there into the store.
"""
