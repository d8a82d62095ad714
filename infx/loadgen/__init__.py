"""The load generator: request sources, one streaming HTTP client, the bench runner."""
