"""Project intelligence's HTTP API, by sub-domain."""
