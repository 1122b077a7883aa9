"""learning: see ../shared/ARCHITECTURE.md; its models arrive with their issue."""
