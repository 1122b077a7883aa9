"""Context assembly: what to inject into a user's next LLM call.

``build`` chooses what applies (``context_build``), ``cache`` keeps its ingredients (two cache layers,
their version keys and invalidation), ``render`` writes the text block. Import the module you need;
nothing is re-exported here.
"""
