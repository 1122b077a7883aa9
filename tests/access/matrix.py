"""The access rules of every API operation, declared once: what each caller gets.

One row per operation (method, path under /api/v1/, body). ``{name}`` in a path or a body is
filled from the access world (tests/access/conftest.py): things owned by ``owner``, the
project-scoped ones in ``apollo``, where ``member`` is a member and ``other`` is not.

The callers: ``anonymous``; ``owner``, ``other``, ``member`` and ``admin`` (staff) with their
own user keys; ``service`` (a service key acting as itself); ``acting`` (the service key naming
the owner with X-On-Behalf-Of). Each expectation is a status code, or for a list:

- ``SEES``: 200, and the owner's item named by ``sees`` is in the list;
- ``BLIND``: 200, and it is not.

Every refused call (4xx) must leave the database as it was; tests/access/test_matrix.py checks
that and expands this table. A route without a row fails the suite (test_every_route_has_rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEES = "sees"
BLIND = "blind"
# Learning endpoints act on the caller's own data: a service key must name the user.
NAME_THE_USER = 400


@dataclass(frozen=True)
class Sees:
    """Where the owner's item is in a list response: ``key`` of the body ("" for the body itself),
    matched on ``field`` against the world's id ``item``."""

    key: str
    item: str
    field: str = "id"


@dataclass(frozen=True)
class Op:
    method: str
    path: str  # under /api/v1/
    expect: dict[str, int | str]
    body: dict[str, Any] = field(default_factory=dict)  # the query string for a GET
    sees: Sees | None = None
    label: str = ""  # tells apart two rows of one route

    def __post_init__(self) -> None:
        self.expect.setdefault("anonymous", 401)  # every API route: 401 with a WWW-Authenticate challenge
        missing = {"owner", "other", "member", "admin", "service", "acting"} - set(self.expect)
        assert not missing, f"{self.method} {self.path}: declare {sorted(missing)}"

    @property
    def name(self) -> str:
        return f"{self.method} {self.path}{f' ({self.label})' if self.label else ''}"


def everyone(status: int | str, **overrides: int | str) -> dict[str, int | str]:
    """The same outcome for every signed-in caller, except ``overrides``."""
    return dict.fromkeys(("owner", "other", "member", "admin", "service", "acting"), status) | overrides


def own(status: int | str, refused: int | str = 404, **overrides: int | str) -> dict[str, int | str]:
    """The learning endpoints' rule: the subject's own rows only (the caller, or the user a service
    key names); another user's id is ``refused`` (404: ids do not leak), admins included."""
    base = {"owner": status, "acting": status, "other": refused, "member": refused, "admin": refused}
    return base | {"service": NAME_THE_USER} | overrides


def staff_only(status: int | str) -> dict[str, int | str]:
    """The promotion ledger: staff admins only; a service key is not an admin."""
    return everyone(403, admin=status)


EVENT = {"event_type": "thumbs", "event_family": "assistant_response", "signal": "positive"}
AS_OWNER_IN_APOLLO = {"user_id": "{user_id}", "project": "apollo"}
TASK = {"task_snapshot": {"id": "t-new", "title": "Call Acme"}, "rating": "good", "completed": True}

OPERATIONS: list[Op] = [
    # --- accounts ---------------------------------------------------------------------------
    Op("GET", "me", everyone(200)),
    Op("GET", "projects", everyone(SEES, other=BLIND), sees=Sees("", "project", "slug")),
    Op(
        "GET",
        "api-keys",
        everyone(BLIND, owner=SEES, admin=SEES, service=403, acting=403),
        sees=Sees("", "owner_key"),
    ),
    Op("POST", "api-keys", everyone(201, service=403, acting=403), body={"name": "laptop"}),
    Op(
        "POST",
        "api-keys",
        everyone(403, admin=201),  # only staff own service keys
        body={"name": "backend", "kind": "service"},
        label="a service key",
    ),
    Op(
        "PUT",
        "api-keys/{service_key}/projects",
        everyone(403, admin=200),  # only staff admins limit service keys
        body={"projects": ["apollo"]},
    ),
    Op("POST", "api-keys/{owner_key}/revoke", everyone(404, owner=200, admin=200, service=403, acting=403)),
    # --- feedback ---------------------------------------------------------------------------
    Op("GET", "feedback/events", everyone(SEES, other=BLIND), sees=Sees("results", "event")),
    Op(
        "GET",
        "feedback/events",
        everyone(SEES, other=BLIND, member=BLIND),
        sees=Sees("results", "private_event"),
        label="a private event",
    ),
    Op(
        "POST",
        "feedback/events",
        everyone(201, other=403, member=403, admin=403),
        body=EVENT | AS_OWNER_IN_APOLLO,
    ),
    Op(
        "POST",
        "feedback/events/bulk",
        everyone(201, other=403, member=403, admin=403),
        body={"events": [EVENT | AS_OWNER_IN_APOLLO]},
    ),
    Op("GET", "feedback/events/{event}", everyone(200, other=404)),
    Op("GET", "feedback/events/{private_event}", everyone(200, other=404, member=404), label="a private event"),
    Op("GET", "feedback/tasks", everyone(SEES, other=BLIND), sees=Sees("results", "task")),
    Op("POST", "feedback/tasks", everyone(201, other=403, member=403, admin=403), body=TASK | AS_OWNER_IN_APOLLO),
    Op("GET", "feedback/tasks/{task}", everyone(200, other=404)),
    # --- learning (also mounted at /api/pdb/v1/reggie/) --------------------------------------
    Op(
        "POST",
        "messages",
        own(201, refused=201, other=403),
        body={"session_id": "s1", "content": "Keep it short.", "project": "apollo"},
    ),
    Op("GET", "messages/{message}", own(200)),
    Op(
        "POST",
        "commands/runs",
        own(201, refused=201, other=403),
        body={"plugin": "email", "command": "draft", "output": "Hello.", "project": "apollo"},
    ),
    Op("POST", "commands/decisions", own(201), body={"run_id": "{run}", "decision": "accepted"}),
    Op(
        "POST",
        "responses/feedback",
        own(201, refused=201, other=403),
        body={"response_id": "r-1", "rating": "up", "project": "apollo"},
    ),
    Op("GET", "preferences", own(SEES, refused=BLIND), sees=Sees("preferences", "preference")),
    Op(
        "POST",
        "preferences",
        own(201, refused=201),
        body={"category": "tone", "description": "Write formally"},
    ),
    Op("GET", "preferences/check-in", own(200, refused=200)),
    Op("PATCH", "preferences/{preference}/toggle", own(200), body={"active": False}),
    Op("DELETE", "preferences/{preference}", own(204)),
    Op("POST", "preferences/{switched_preference}/undo", own(200)),
    # A private preference is never shared: its owner is told so (400 naming subject_type).
    Op("POST", "preferences/{preference}/share", own(400), body={"visibility": "team"}),
    Op("GET", "workflows", own(SEES, refused=BLIND), sees=Sees("workflows", "workflow")),
    Op("PATCH", "workflows/{workflow}/toggle", own(200), body={"active": False}),
    Op("DELETE", "workflows/{workflow}", own(204)),
    Op("POST", "workflows/{switched_workflow}/undo", own(200)),
    Op("POST", "workflows/{workflow}/share", own(201), body={"visibility": "project", "project": "apollo"}),
    Op("GET", "context", own(200, refused=200, other=403), body={"project": "apollo", "message": "hello"}),
    Op(
        "POST",
        "context",
        own(200, refused=200, other=403),
        body={"project": "apollo", "message": "hello", "response_id": "resp-1"},
    ),
    Op("GET", "memories", own(SEES, refused=BLIND), sees=Sees("memories", "memory")),
    Op("GET", "memories/{memory}", own(200)),
    Op("PATCH", "memories/{memory}", own(200), body={"content": "My locker code word is heron."}),
    Op("DELETE", "memories/{memory}", own(204)),
    Op("POST", "memories/{edited_memory}/undo", own(200)),
    Op("POST", "memories/{memory}/share", own(201), body={"visibility": "project", "project": "apollo"}),
    Op("GET", "taste-patterns", own(SEES, refused=BLIND), sees=Sees("taste_patterns", "taste_pattern")),
    Op("POST", "taste-patterns/{taste_pattern}/stop", own(200)),
    Op("POST", "taste-patterns/{stopped_taste_pattern}/resume", own(200)),
    Op("POST", "taste-patterns/{stopped_taste_pattern}/undo", own(200)),
    # --- promotions -------------------------------------------------------------------------
    Op("GET", "promotions", staff_only(SEES), sees=Sees("results", "candidate")),
    Op("POST", "promotions", staff_only(201), body={"promotion_type": "task_example", "subject_id": "{task}"}),
    Op("POST", "promotions/scan", staff_only(202), body={"scanner": "task_example"}),
    Op("GET", "promotions/scans", staff_only(SEES), sees=Sees("results", "scan")),
    Op("GET", "promotions/scans/{scan}", staff_only(200)),
    Op("GET", "promotions/{candidate}", staff_only(200)),
    Op("GET", "promotions/{candidate}/preview", staff_only(400)),
    Op("POST", "promotions/{candidate}/approve", staff_only(200)),
    Op("POST", "promotions/{candidate}/reject", staff_only(200)),
    Op("POST", "promotions/{approved}/apply", staff_only(200)),
    Op("POST", "promotions/{applied}/pause", staff_only(200)),
    Op("POST", "promotions/{paused}/resume", staff_only(200)),
    Op("POST", "promotions/{applied}/supersede", staff_only(200)),
    # --- erasure (staff people only; never a service key, acting for a staff user or not) -----
    Op("POST", "users/{erasable}/erase", staff_only(200)),
    # --- retrieval --------------------------------------------------------------------------
    Op(
        "POST",
        "retrieval/documents",
        # Acting for the owner means the owner's rights: a member, not an admin, of apollo. 201: a new document.
        everyone(403, admin=201, service=201),
        body={"documents": [{"id": "new-doc", "raw_text": "Flutter margins of the new wing.", "project": "apollo"}]},
    ),
    Op(
        "POST",
        "retrieval/search",
        everyone(SEES, other=BLIND),
        body={"query": "wing flutter tests"},
        sees=Sees("results", "chunk", "chunk_id"),
    ),
    Op(
        "POST",
        "retrieval/search",
        everyone(SEES, other=403),  # a project the caller is not in: refused, as everywhere else
        body={"query": "wing flutter tests", "project": "apollo"},
        sees=Sees("results", "chunk", "chunk_id"),
        label="in a project",
    ),
    Op(
        "PUT",
        "retrieval/projects/{project}/settings",
        # Staff admins, service keys and the project's admins (acting for the owner: a member, not an admin).
        everyone(403, admin=200, service=200),
        body={"exploration_share": 0.1},
    ),
    Op(
        "POST",
        "retrieval/feedback",
        everyone(200, other=404, member=404),
        body={"trace_id": "{trace}", "results": [{"chunk_id": "{chunk}", "cited": True}]},
    ),
    # --- intelligence: the packet/card loop (project members; ids of others' projects do not leak) --
    Op("GET", "intelligence/projects/{project}/packet", everyone(200, other=404)),
    Op("GET", "intelligence/projects/{project}/packet", everyone(404), body={"target": "nowhere"}, label="no target"),
    Op("GET", "intelligence/cards/{card}", everyone(200, other=404)),
    Op(
        "POST",
        "intelligence/cards/{card}/feedback",
        everyone(201, other=404),
        body={"signal": "wrong_target", "target": "north-wing", "note": "This is the north wing's crane."},
    ),
    Op("POST", "intelligence/cards/{card}/edit", everyone(201, other=404), body={"title": "Crane permit pending"}),
    Op("POST", "intelligence/cards/{card}/merge", everyone(201, other=404), body={"into": "{merge_card}"}),
    # --- intelligence: the card-review queue (staff admins) -----------------------------------------
    Op("GET", "intelligence/reviews", staff_only(SEES), sees=Sees("results", "card_review")),
    Op("POST", "intelligence/reviews/{card_review}/approve", staff_only(200), body={"notes": "It shipped."}),
    Op("POST", "intelligence/reviews/{card_review}/reject", staff_only(200)),
    # --- intelligence: targets and attribution ------------------------------------------------
    Op("GET", "intelligence/targets", everyone(SEES, other=BLIND), sees=Sees("results", "target")),
    Op(
        "POST",
        "intelligence/targets",
        # Staff admins and the project's admins (nobody in this world); members read only.
        everyone(403, admin=201),
        body={"project": "apollo", "name": "Tower B", "kind": "building", "aliases": ["Tower B", "Block Bravo"]},
    ),
    Op("GET", "intelligence/targets/{target}", everyone(200, other=404)),
    Op(
        "PATCH",
        "intelligence/targets/{target}",
        everyone(403, admin=200, other=404),
        body={"aliases": ["Apollo One"], "external_ids": ["P-1042"]},
    ),
    Op(
        "GET",
        "intelligence/attribution/candidates",
        staff_only(SEES),
        sees=Sees("results", "attribution_candidate"),
    ),
    Op("GET", "intelligence/attribution/candidates/{attribution_candidate}", staff_only(200)),
    Op("POST", "intelligence/attribution/candidates/{attribution_candidate}/approve", staff_only(200)),
    Op(
        "POST",
        "intelligence/attribution/candidates/{attribution_candidate}/reject",
        staff_only(200),
        body={"notes": "a newsletter"},
    ),
    Op(
        "POST",
        "intelligence/attribution/candidates/{attribution_candidate}/correct",
        staff_only(200),
        body={"target": "{target}", "notes": "the team calls it the Dig"},
    ),
]
