"""Writes of the feedback app, by sub-domain: ``events`` (the one event writer and its checks),
``bulk`` (all-or-nothing bulk writes) and ``task_feedback`` (task ratings)."""
