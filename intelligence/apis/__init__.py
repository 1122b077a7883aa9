"""HTTP API of project intelligence, one module per resource, mounted at /api/v1/intelligence/."""
