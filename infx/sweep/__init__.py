"""Sweeps: run matrix points end to end (local and Slurm), with launch reuse, isolation and resume."""
