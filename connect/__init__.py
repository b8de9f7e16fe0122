"""Tributary's Connect runtime: plugin API, worker, herders, REST API and CLI."""
