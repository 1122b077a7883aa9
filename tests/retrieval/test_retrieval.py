"""Documents, chunks, the vector index, traced search, and feedback on traced results."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.models import ApiKey, ProjectMembership
from accounts.services import api_key_create
from core.embeddings import OpenAIEmbedder, get_embedder
from feedback.models import FeedbackEvent
from retrieval import index as index_module
from retrieval.chunking import chunk_text
from retrieval.models import Chunk, Document, IndexGeneration, RetrievalFeedback, RetrievalQuery
from retrieval.scope import query_terms
from retrieval.selectors import rank_chunks
from retrieval.services import DocumentInput, documents_import
from tests.access.test_matrix import database_state
from tests.factories import ProjectFactory
from tests.learning.fake_openai import FakeOpenAI

DOCS = [
    {
        "id": "wing",
        "title": "Wing flutter",
        "raw_text": "Flutter of aircraft wings at transonic speeds.\n\n"
        "Aeroelastic coupling between bending and torsion modes leads to divergence.",
    },
    {
        "id": "boundary",
        "title": "Boundary layers",
        "raw_text": "Laminar boundary layer transition on a flat plate with pressure gradients and heat transfer.",
    },
    {"id": "recipes", "title": "Bread", "raw_text": "Sourdough bread needs a starter, flour, water and salt."},
]


@pytest.fixture
def corpus(world, embedder):
    documents_import(actor=world.actor("service"), items=[DocumentInput(**d) for d in DOCS])
    documents_import(
        actor=world.actor("service"),
        items=[
            DocumentInput(
                id="apollo-plan",
                title="Apollo launch plan",
                project_slug="apollo",
                raw_text="The Apollo project launches the wing flutter test campaign in May.",
            )
        ],
    )


def search(client, query, **body):
    return client.post("/api/v1/retrieval/search", {"query": query, **body}, format="json")


def test_chunking_respects_paragraphs_and_the_size_limit():
    text = "First paragraph.\n\nSecond one. " + ("A long sentence. " * 100)
    passages = chunk_text(text, max_chars=200)
    assert passages[0].startswith("First paragraph.")
    assert all(len(p) <= 200 for p in passages)
    assert "".join(passages).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")


def test_import_chunks_embeds_and_skips_unchanged(world, embedder):
    service = world.actor("service")
    first = documents_import(actor=service, items=[DocumentInput(**d) for d in DOCS])
    assert (first.created, first.chunks_embedded) == (3, Chunk.objects.count())
    generation = IndexGeneration.objects.get().generation
    again = documents_import(actor=service, items=[DocumentInput(**d) for d in DOCS])
    assert (again.unchanged, again.chunks_embedded, again.created) == (3, 0, 0)
    assert IndexGeneration.objects.get().generation == generation  # no work, no re-index
    changed = documents_import(actor=service, items=[DocumentInput(**{**DOCS[2], "title": "Sourdough"})])
    assert (changed.updated, changed.chunks_embedded, changed.chunks_reused) == (1, 0, 1)  # same passage, reused


def test_search_ranks_traces_and_respects_projects(world, corpus):
    response = search(world.client("other"), "aeroelastic wing flutter", k=3, tool_name="chat")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["results"][0]["document_id"] == "wing"
    assert [r["rank"] for r in body["results"]] == [1, 2, 3]
    assert all(r["weight"] == 1.0 for r in body["results"])
    assert "apollo-plan" not in {r["document_id"] for r in body["results"]}  # not a member of apollo
    rows = RetrievalFeedback.objects.filter(trace_id=body["trace_id"]).order_by("rank")
    assert [(r.rank, r.chunk.chunk_id, r.tool_name) for r in rows] == [
        (r["rank"], r["chunk_id"], "chat") for r in body["results"]
    ]
    member = search(world.client("owner"), "Apollo launch campaign", k=2, project="apollo").json()
    assert member["results"][0]["document_id"] == "apollo-plan"


def test_a_search_traces_every_result_as_the_orm_would_write_it(world, corpus):
    """The trace and its k results are written in one statement on PostgreSQL: every column as the
    model's own save would set it (defaults, timestamps, the project), in (document, rank) order."""
    with CaptureQueriesContext(connection) as queries:
        body = search(
            world.client("owner"), "wing flutter campaign", k=4, project="apollo", tool_name="chat", session_id="s1"
        ).json()
    inserts = [q["sql"] for q in queries.captured_queries if "INSERT INTO" in q["sql"]]
    assert len(inserts) == (1 if connection.vendor == "postgresql" else 2)
    trace = RetrievalQuery.objects.get(pk=body["trace_id"])
    assert (trace.user, trace.project, trace.k, trace.tool_name, trace.session_id) == (
        world.owner,
        world.project,
        4,
        "chat",
        "s1",
    )
    assert trace.query_text == "wing flutter campaign"
    assert trace.feedback_at is None
    assert len(trace.embedding) == 384
    rows = list(RetrievalFeedback.objects.filter(trace=trace).order_by("id"))
    assert [(r.document_id, r.rank) for r in rows] == sorted((h["document_id"], h["rank"]) for h in body["results"])
    for row, hit in zip(sorted(rows, key=lambda r: r.rank), body["results"], strict=True):
        assert (row.chunk.chunk_id, row.score, row.weight, row.natural_rank) == (
            hit["chunk_id"],
            pytest.approx(hit["score"]),
            hit["weight"],
            hit["rank"],
        )
        assert (row.user, row.project, row.tool_name, row.session_id, row.query_text) == (
            world.owner,
            world.project,
            "chat",
            "s1",
            "wing flutter campaign",
        )
        assert (row.outcome, row.metadata, row.cited, row.used_in_answer, row.explored) == (
            "unknown",
            {},
            False,
            False,
            False,
        )
        assert abs(row.created_at - trace.created_at).total_seconds() < 5
        assert abs(row.updated_at - row.created_at).total_seconds() < 5


def test_a_new_document_is_searchable_at_once(world, corpus):
    documents_import(
        actor=world.actor("service"),
        items=[
            DocumentInput(
                id="hypersonic",
                title="Hypersonic heating",
                raw_text="Stagnation point heating of blunt bodies at hypersonic Mach numbers.",
            )
        ],
    )
    body = search(world.client("other"), "heating of blunt bodies in hypersonic flow", k=1).json()
    assert body["results"][0]["document_id"] == "hypersonic"


def test_the_index_survives_a_restart(world, corpus, monkeypatch, settings):
    settings.RETRIEVAL_EXACT_SEARCH = True  # the in-process index (SQLite's; PostgreSQL has none)
    search(world.client("other"), "flutter", k=1)  # builds and saves the index
    fresh = index_module.VectorIndex()  # a new process
    monkeypatch.setattr(fresh, "_build", lambda: pytest.fail("rebuilt instead of loading the saved index"))
    assert fresh.ready().ntotal == Chunk.objects.count()


def test_the_impact_preview_ranks_as_search_does_for_an_admin(world, corpus, embedder):
    """One ranking: the preview's ids are search's hits, in search's order, for the same query."""
    query = "aeroelastic wing flutter"
    body = search(world.client("admin"), query, k=4).json()
    ranked = rank_chunks(query_vector=embedder.embed_one(query), project=None, k=4, query_text=query)
    assert [Chunk.objects.get(pk=pk).chunk_id for pk in ranked] == [r["chunk_id"] for r in body["results"]]


def test_query_terms_are_stemmed_content_words():
    assert query_terms("Does this pressure gradient affect the boundary layers? Papers, please.") == [
        "affect",
        "boundary",
        "gradient",
        "layer",
        "pressure",
    ]
    assert query_terms("layers layer LAYERS") == ["layer"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x", "k": 0}, "k"),
        ({"query": "x", "k": 500}, "k"),
        ({"query": "x", "project": "nope"}, "project"),
        ({"query": 5}, "query"),
        ({"query": "x", "extra": 1}, "extra"),
    ],
)
def test_search_bad_input(world, corpus, body, field):
    response = world.client("owner").post("/api/v1/retrieval/search", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not RetrievalQuery.objects.exists()


def test_feedback_marks_results_and_writes_events(world, corpus):
    client = world.client("other")
    body = search(client, "wing flutter", k=3).json()
    top, second = body["results"][0]["chunk_id"], body["results"][1]["chunk_id"]
    response = client.post(
        "/api/v1/retrieval/feedback",
        {
            "trace_id": body["trace_id"],
            "results": [
                {"chunk_id": top, "cited": True, "used_in_answer": True, "outcome": "helpful"},
                {"chunk_id": second, "outcome": "stale"},
            ],
        },
        format="json",
    )
    assert response.json() == {"updated": 2}
    rows = {r.chunk.chunk_id: r for r in RetrievalFeedback.objects.filter(trace_id=body["trace_id"])}
    assert (rows[top].cited, rows[top].used_in_answer, rows[top].outcome) == (True, True, "helpful")
    assert rows[second].outcome == "stale"
    events = FeedbackEvent.objects.filter(event_family="retrieval").order_by("subject_id")
    assert {(e.subject_id, e.signal) for e in events} == {(top, "positive"), (second, "stale")}


def test_a_downvoted_answer_is_evidence_not_a_verdict(world, corpus):
    client = world.client("other")
    body = search(client, "wing flutter", k=3).json()
    used = body["results"][0]["chunk_id"]
    client.post(
        "/api/v1/retrieval/feedback",
        {"trace_id": body["trace_id"], "results": [{"chunk_id": used, "used_in_answer": True}]},
        format="json",
    )
    client.post("/api/v1/retrieval/feedback", {"trace_id": body["trace_id"], "answer_rating": "down"}, format="json")
    outcomes = {r.chunk.chunk_id: r.outcome for r in RetrievalFeedback.objects.filter(trace_id=body["trace_id"])}
    assert outcomes.pop(used) == "unhelpful"
    assert set(outcomes.values()) == {"unknown"}


def test_an_upvoted_answer_marks_what_it_used_helpful_and_nothing_else(world, corpus):
    client = world.client("other")
    body = search(client, "wing flutter", k=3).json()
    used, reported, *_ = (r["chunk_id"] for r in body["results"])
    feedback = {
        "trace_id": body["trace_id"],
        "results": [
            {"chunk_id": used, "cited": True},
            {"chunk_id": reported, "used_in_answer": True, "outcome": "stale"},
        ],
        "answer_rating": "up",
    }
    assert client.post("/api/v1/retrieval/feedback", feedback, format="json").status_code == 200
    outcomes = {r.chunk.chunk_id: r.outcome for r in RetrievalFeedback.objects.filter(trace_id=body["trace_id"])}
    # The client's own outcome stands; results the answer did not use keep no verdict.
    assert (outcomes.pop(used), outcomes.pop(reported)) == ("helpful", "stale")
    assert set(outcomes.values()) == {"unknown"}
    signals = dict(FeedbackEvent.objects.filter(event_family="retrieval").values_list("subject_id", "signal"))
    assert signals == {used: "positive", reported: "stale"}
    # Voting again, either way, leaves the earlier report about the passage itself as it was.
    for rating in ("up", "down"):
        again = {"trace_id": body["trace_id"], "answer_rating": rating}
        assert client.post("/api/v1/retrieval/feedback", again, format="json").status_code == 200
        row = RetrievalFeedback.objects.get(trace_id=body["trace_id"], chunk__chunk_id=reported)
        assert row.outcome == "stale"


@pytest.mark.parametrize(
    ("results", "field"),
    [
        ([{"chunk_id": "nope#0"}], "chunk_id"),
        ([{"chunk_id": "wing#0", "outcome": "great"}], "outcome"),
        ([{"chunk_id": "wing#0", "cited": "sometimes"}], "cited"),
    ],
)
def test_feedback_bad_input(world, corpus, results, field):
    body = search(world.client("other"), "wing flutter", k=3).json()
    feedback = {"trace_id": body["trace_id"], "results": results}
    response = world.client("other").post("/api/v1/retrieval/feedback", feedback, format="json")
    assert response.status_code == 400
    assert field in json.dumps(response.json()["error"]["fields"])
    assert set(RetrievalFeedback.objects.values_list("outcome", flat=True)) == {"unknown"}


def test_another_users_trace_is_404(world, corpus):
    body = search(world.client("other"), "wing flutter", k=1).json()
    feedback = {"trace_id": body["trace_id"], "answer_rating": "down"}
    assert world.client("owner").post("/api/v1/retrieval/feedback", feedback, format="json").status_code == 404
    assert world.client("admin").post("/api/v1/retrieval/feedback", feedback, format="json").status_code == 200


@pytest.mark.parametrize(
    ("role", "project", "expected"),
    [
        ("anonymous", None, 401),
        ("owner", None, 403),
        ("owner", "apollo", 403),
        ("other", "apollo", 403),
        ("admin", None, 201),
        ("service", "apollo", 201),
    ],
)
def test_who_may_import(world, embedder, role, project, expected):
    doc = {"id": f"doc-{role}", "raw_text": "Some text about wings.", "project": project}
    response = world.client(role).post("/api/v1/retrieval/documents", {"documents": [doc]}, format="json")
    assert response.status_code == expected
    assert Document.objects.filter(pk=f"doc-{role}").exists() == (expected == 201)


def test_a_project_admin_imports_into_their_project(world, embedder):
    ProjectMembership.objects.filter(user=world.owner).update(role="admin")
    doc = {"id": "plan", "raw_text": "Launch plan.", "project": "apollo"}
    assert (
        world.client("owner").post("/api/v1/retrieval/documents", {"documents": [doc]}, format="json").json()["created"]
        == 1
    )


@pytest.mark.parametrize("where", [None, "zeus"])
def test_a_project_admin_may_not_replace_a_document_held_elsewhere(world, embedder, where):
    """Naming an existing document's id replaces it (and moved it): only for who may import where it is."""
    ProjectMembership.objects.filter(user=world.owner).update(role="admin")
    zeus = ProjectFactory(slug="zeus")
    _, raw = api_key_create(owner=world.admin, name="apollo only", kind=ApiKey.Kind.SERVICE, projects=[world.project])
    documents_import(
        actor=world.actor("admin"),
        items=[
            DocumentInput(id="held", raw_text="Secret terms.", project_slug=where),
            DocumentInput(id="mine", raw_text="Ours.", project_slug="apollo"),
        ],
    )
    before = database_state()
    for client in (world.client("owner"), APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}")):
        doc = {"id": "held", "raw_text": "Overwritten.", "project": "apollo"}
        response = client.post("/api/v1/retrieval/documents", {"documents": [doc]}, format="json")
        assert response.status_code == 403, response.content
        assert response.json()["error"]["fields"] == {"id": ["Document 'held' exists and you may not replace it."]}
        assert "zeus" not in response.content.decode()
    assert database_state() == before
    assert Document.objects.get(pk="held").project == (zeus if where else None)
    doc = {"id": "mine", "raw_text": "Ours, edited.", "project": "apollo"}  # its own project's: allowed
    response = world.client("owner").post("/api/v1/retrieval/documents", {"documents": [doc]}, format="json")
    assert response.json()["updated"] == 1


def test_a_reimport_without_a_project_takes_the_right_to_replace_where_the_document_is(world, embedder):
    """A connector that does not know a document's project re-imports it without one, and the document
    stays where it is: its project's admins and a service key limited to that project may do that; a
    project admin or limited key elsewhere gets the refusal that does not say where it is, and a new
    document without a project is still organisation-wide, for staff and unlimited keys only."""
    ProjectMembership.objects.filter(user=world.owner).update(role="admin")
    zeus = ProjectFactory(slug="zeus")
    documents_import(
        actor=world.actor("admin"),
        items=[
            DocumentInput(id="ours", raw_text="Launch plan.", project_slug="apollo"),
            DocumentInput(id="theirs", raw_text="Secret terms.", project_slug="zeus"),
            DocumentInput(id="everyones", raw_text="Holiday calendar."),
        ],
    )
    _, raw = api_key_create(owner=world.admin, name="apollo only", kind=ApiKey.Kind.SERVICE, projects=[world.project])
    limited = APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for client, text in ((world.client("owner"), "Launch plan, v2."), (limited, "Launch plan, v3.")):
        doc = {"id": "ours", "raw_text": text}
        response = client.post("/api/v1/retrieval/documents", {"documents": [doc]}, format="json")
        assert response.json()["updated"] == 1, response.content
        assert Document.objects.get(pk="ours").project == world.project
    before = database_state()
    for client in (world.client("owner"), limited, world.client("other")):
        # Refused exactly as a new document without a project is: nothing says whether or where it exists.
        new = client.post("/api/v1/retrieval/documents", {"documents": [{"id": "new", "raw_text": "x"}]}, format="json")
        assert new.status_code == 403
        for held in ("theirs", "everyones"):
            doc = {"id": held, "raw_text": "x"}
            response = client.post("/api/v1/retrieval/documents", {"documents": [doc]}, format="json")
            assert response.status_code == 403
            assert {**response.json()["error"], "request_id": ""} == {**new.json()["error"], "request_id": ""}
    assert database_state() == before
    assert Document.objects.get(pk="theirs").project == zeus


def test_a_refused_replacement_names_the_first_refused_document_of_the_request(world, embedder):
    """Not the first by where they are: the answer says nothing of the projects' names."""
    ProjectMembership.objects.filter(user=world.owner).update(role="admin")
    for slug in ("aaa", "zzz"):
        ProjectFactory(slug=slug)
    documents_import(
        actor=world.actor("admin"),
        items=[
            DocumentInput(id="in-zzz", raw_text="Z.", project_slug="zzz"),
            DocumentInput(id="in-aaa", raw_text="A.", project_slug="aaa"),
        ],
    )
    for order in (["in-zzz", "in-aaa"], ["in-aaa", "in-zzz"]):
        docs = [{"id": pk, "raw_text": "Overwritten.", "project": "apollo"} for pk in order]
        response = world.client("owner").post("/api/v1/retrieval/documents", {"documents": docs}, format="json")
        assert response.status_code == 403
        message = f"Document {order[0]!r} exists and you may not replace it."
        assert response.json()["error"]["fields"] == {"id": [message]}


@pytest.mark.parametrize("change", ["moved", "deleted"])
def test_a_document_that_changes_place_during_an_import_is_not_written(world, embedder, monkeypatch, change):
    """The rights are checked where the document was; if it moved or went before the import's transaction
    locks it, the import stops with a 409 instead of writing where nobody checked (or organisation-wide)."""
    from retrieval import services  # noqa: PLC0415

    ProjectMembership.objects.filter(user=world.owner).update(role="admin")
    zeus = ProjectFactory(slug="zeus")
    documents_import(
        actor=world.actor("admin"), items=[DocumentInput(id="ours", raw_text="Plan.", project_slug="apollo")]
    )
    found = services._embeddings_by_hash

    def meanwhile(hashes):  # runs between the checks and the transaction
        if change == "moved":
            Document.objects.filter(pk="ours").update(project=zeus)
        else:
            Document.objects.filter(pk="ours").delete()
        return found(hashes)

    monkeypatch.setattr(services, "_embeddings_by_hash", meanwhile)
    response = world.client("owner").post(
        "/api/v1/retrieval/documents", {"documents": [{"id": "ours", "raw_text": "Plan, v2."}]}, format="json"
    )
    assert response.status_code == 409, response.content
    message = "Document 'ours' changed while it was being imported; send it again."
    assert response.json()["error"]["fields"] == {"id": [message]}
    after = Document.objects.filter(pk="ours").first()
    if change == "moved":
        assert (after.project, after.raw_text) == (zeus, "Plan.")
    else:
        assert after is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"documents": []}, "documents"),
        ({"documents": [{"id": "x"}]}, "raw_text"),
        ({"documents": [{"id": "x", "raw_text": "   "}]}, "raw_text"),
        ({"documents": [{"id": "x", "raw_text": "t", "project": "nope"}]}, "project"),
        ({"documents": [{"id": f"d{i}", "raw_text": "t"} for i in range(501)]}, "documents"),
    ],
)
def test_import_bad_input(world, body, field):
    response = world.client("admin").post("/api/v1/retrieval/documents", body, format="json")
    assert response.status_code == 400
    assert field in json.dumps(response.json()["error"]["fields"])
    assert not Document.objects.exists()


def test_import_command_reads_json_lines_and_folders(db, tmp_path, embedder):
    lines = tmp_path / "docs.jsonl"
    lines.write_text("\n".join(json.dumps({"id": d["id"], "title": d["title"], "text": d["raw_text"]}) for d in DOCS))
    out = io.StringIO()
    call_command("import_documents", str(lines), stdout=out, stderr=io.StringIO())
    assert "3 created" in out.getvalue()
    call_command("import_documents", str(lines), stdout=out, stderr=io.StringIO())
    assert "3 unchanged; 0 passages embedded" in out.getvalue()
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.md").write_text("Notes about wind tunnels.")
    (folder / "ignored.bin").write_bytes(b"\x00")
    call_command("import_documents", str(folder), stdout=out, stderr=io.StringIO())
    assert Document.objects.get(pk="sub/a.md").title == "a"


def test_import_command_skips_documents_without_text(db, tmp_path, embedder):
    lines = tmp_path / "docs.jsonl"
    lines.write_text(json.dumps({"id": "a", "text": "Wings."}) + "\n" + json.dumps({"id": "b", "text": "  "}))
    out = io.StringIO()
    call_command("import_documents", str(lines), stdout=out, stderr=io.StringIO())
    assert "1 created" in out.getvalue()
    assert "1 skipped for having no text (b)" in out.getvalue()


def test_openai_compatible_embeddings_backend(world, settings):
    """The production embedding option, through the real openai client against a local server."""
    fake = FakeOpenAI().start()
    try:
        settings.EMBEDDING_BACKEND = "openai"
        settings.OPENAI_API_KEY = "sk-test"
        settings.OPENAI_BASE_URL = fake.base_url
        embedder = get_embedder()
        assert isinstance(embedder, OpenAIEmbedder)
        vectors = embedder.embed(["wing flutter", "boundary layers"])
        assert vectors.shape == (2, 384)
        assert abs(float(vectors[0] @ vectors[0]) - 1.0) < 1e-5
        request = fake.requests[0]["body"]
        assert (request["model"], request["dimensions"], request["input"]) == (
            "text-embedding-3-small",
            384,
            ["wing flutter", "boundary layers"],
        )
        report = documents_import(actor=world.actor("service"), items=[DocumentInput(id="w", raw_text="Wings.")])
        assert report.chunks_embedded == 1
    finally:
        fake.stop()
