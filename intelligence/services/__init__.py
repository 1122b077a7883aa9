"""Project intelligence's writes, by sub-domain: ``targets``, ``jobs`` (the compiler's durable job
ledger), ``refresh`` and ``packets``."""
