"""The `connect` command line."""
