"""Writes of the learning app, one module per sub-domain (messages, preferences, workflows, memories,
taste, agent learnings, usages). Import the module you need; nothing is re-exported here."""
