"""Multi-role (disaggregated prefill/decode) deployments: typed model, renderers, local process groups."""
