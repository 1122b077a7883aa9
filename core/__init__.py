"""Plumbing every app may use and that knows no app: text helpers, ids, embeddings, typed settings.

The bottom layer above ``config`` (see the import-linter contract in pyproject.toml): nothing here
imports ``accounts``, ``feedback``, ``learning``, ``retrieval`` or ``promotions``.
"""
