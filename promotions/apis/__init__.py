"""The promotions app's HTTP API: the ledger (``promotions``), its scans (``scans``) and the owners'
requests to share a private item (``shares``)."""
