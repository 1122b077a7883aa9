"""HTTP API of preference learning: observe messages, read context, manage what was learned.

One module per resource (messages, context, preferences, workflows, memories, taste, responses);
``common`` names whose data a request is about. Mounted at /api/v1/ and, for existing clients, at
/api/pdb/v1/reggie/. Every route acts on the caller's own data (a service key names the user with
X-On-Behalf-Of); another user's ids answer 404, so they do not leak. Nothing is re-exported here.
"""
