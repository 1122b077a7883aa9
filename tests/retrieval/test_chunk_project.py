"""Each chunk carries its document's project (search filters on it), kept by the database: import,
re-import into another project, attribution, review decisions and raw SQL all leave the two equal,
and the migration fills it in."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from retrieval.models import Chunk, Document
from retrieval.services import DocumentInput, document_set_project, documents_import
from tests.factories import ProjectFactory

A = "Flutter of aircraft wings couples bending and torsion at transonic speed."
B = "Laminar boundary layers on flat plates undergo transition under pressure gradients."
B2 = "Turbulent boundary layers on flat plates separate under adverse pressure gradients."


@pytest.fixture(autouse=True)
def _short_passages(settings):
    settings.RETRIEVAL_CHUNK_CHARS = 100  # each paragraph its own passage


def load(world, *paragraphs: str, project: str | None = None) -> None:
    documents_import(
        actor=world.actor("service"),
        items=[DocumentInput(id="doc", title="Aero", raw_text="\n\n".join(paragraphs), project_slug=project)],
    )


def projects_of_chunks() -> list[int | None]:
    return list(Chunk.objects.filter(document_id="doc").order_by("position").values_list("project_id", flat=True))


def found_by(world, who: str, query: str) -> set[str]:
    response = world.client(who).post("/api/v1/retrieval/search", {"query": query, "k": 5}, format="json")
    assert response.status_code == 200, response.content
    return {r["document_id"] for r in response.json()["results"]}


def test_imported_chunks_carry_their_documents_project(world, embedder):
    load(world, A, B, project="apollo")
    assert projects_of_chunks() == [world.project.pk, world.project.pk]
    assert found_by(world, "member", "wing flutter") == {"doc"}
    assert found_by(world, "other", "wing flutter") == set()


def test_a_reimport_into_another_project_moves_kept_and_new_chunks_alike(world, embedder):
    load(world, A, B, project="apollo")
    zeus = ProjectFactory(slug="zeus")
    kept = Chunk.objects.get(document_id="doc", content=A).pk
    load(world, A, B2, project="zeus")  # A's chunk is kept, B2's is new
    assert Chunk.objects.get(document_id="doc", content=A).pk == kept
    assert projects_of_chunks() == [zeus.pk, zeus.pk]
    assert found_by(world, "member", "wing flutter") == set()  # a member of apollo, not of zeus
    load(world, A, B, project="apollo")  # and back into the project
    assert projects_of_chunks() == [world.project.pk, world.project.pk]
    assert found_by(world, "member", "wing flutter") == {"doc"}
    assert found_by(world, "other", "wing flutter") == set()


def test_a_reimport_without_a_project_keeps_the_documents_project(world, embedder):
    """A connector re-syncing a changed document does not know its project: the document stays
    where it is (imported there, or attributed there since), never organisation-wide."""
    load(world, A, B, project="apollo")
    load(world, A, B2)
    assert Document.objects.get(pk="doc").project == world.project
    assert projects_of_chunks() == [world.project.pk, world.project.pk]
    assert found_by(world, "other", "wing flutter") == set()
    zeus = ProjectFactory(slug="zeus")
    document_set_project(document=Document.objects.get(pk="doc"), project_id=zeus.pk)  # as attribution does
    load(world, A, B)
    assert Document.objects.get(pk="doc").project == zeus
    assert found_by(world, "other", "wing flutter") == set()
    assert found_by(world, "member", "wing flutter") == set()


def test_an_unchanged_text_named_with_another_project_moves_there(world, embedder):
    load(world, A, B, project="apollo")
    zeus = ProjectFactory(slug="zeus")
    chunks = list(Chunk.objects.filter(document_id="doc").order_by("position").values_list("pk", flat=True))
    report = documents_import(
        actor=world.actor("service"),
        items=[DocumentInput(id="doc", title="Aero", raw_text=f"{A}\n\n{B}", project_slug="zeus")],
    )
    assert (report.updated, report.unchanged, report.chunks_embedded, report.chunks_kept) == (1, 0, 0, 2)
    assert Document.objects.get(pk="doc").project == zeus
    assert list(Chunk.objects.filter(document_id="doc").order_by("position").values_list("pk", flat=True)) == chunks
    assert projects_of_chunks() == [zeus.pk, zeus.pk]
    assert found_by(world, "member", "wing flutter") == set()
    report = documents_import(  # the same text without a project: nothing to do
        actor=world.actor("service"), items=[DocumentInput(id="doc", title="Aero", raw_text=f"{A}\n\n{B}")]
    )
    assert (report.updated, report.unchanged) == (0, 1)
    assert Document.objects.get(pk="doc").project == zeus


def test_setting_a_documents_project_moves_its_chunks_and_search_follows(world, embedder):
    load(world, A, B)
    zeus = ProjectFactory(slug="zeus")
    assert found_by(world, "member", "wing flutter") == {"doc"}
    document = Document.objects.get(pk="doc")
    document_set_project(document=document, project_id=zeus.pk)
    assert projects_of_chunks() == [zeus.pk, zeus.pk]
    assert found_by(world, "member", "wing flutter") == set()  # a member of apollo, not of zeus
    assert found_by(world, "admin", "wing flutter") == {"doc"}
    document_set_project(document=document, project_id=world.project.pk)
    assert projects_of_chunks() == [world.project.pk, world.project.pk]
    assert found_by(world, "member", "wing flutter") == {"doc"}
    assert found_by(world, "other", "wing flutter") == set()


def test_the_database_keeps_the_copy_whoever_writes(world, embedder):
    load(world, A, B, project="apollo")
    zeus = ProjectFactory(slug="zeus")
    with connection.cursor() as cursor:  # not through the services: raw SQL, as another client would
        cursor.execute("UPDATE document_metadata SET project_id = %s WHERE id = 'doc'", [zeus.pk])
    assert projects_of_chunks() == [zeus.pk, zeus.pk]
    Chunk.objects.filter(document_id="doc").update(project=world.project)  # a chunk cannot leave its document
    assert projects_of_chunks() == [zeus.pk, zeus.pk]
    with connection.cursor() as cursor:
        cursor.execute("UPDATE document_chunks SET project_id = NULL WHERE document_id = 'doc'")
    assert projects_of_chunks() == [zeus.pk, zeus.pk]
    assert found_by(world, "other", "wing flutter") == set()


def _triggers_off() -> None:
    """As chunks were before migration 0015 (the test's transaction puts the triggers back)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred check may be pending at an ALTER
            cursor.execute("ALTER TABLE document_chunks DISABLE TRIGGER document_chunks_project")
        else:
            cursor.execute("DROP TRIGGER document_chunks_project_update")


def test_the_migration_gives_existing_chunks_their_documents_project(world, embedder):
    migration = importlib.import_module("retrieval.migrations.0016_chunk_project_backfill")
    load(world, A, B, project="apollo")
    documents_import(actor=world.actor("service"), items=[DocumentInput(id="open", title="Open", raw_text=B2)])
    _triggers_off()
    Chunk.objects.update(project=None)
    assert projects_of_chunks() == [None, None]
    state = MigrationExecutor(connection).loader.project_state(("retrieval", "0016_chunk_project_backfill"))
    migration.chunks_take_their_documents_project(state.apps, SimpleNamespace(connection=connection))
    assert projects_of_chunks() == [world.project.pk, world.project.pk]
    assert list(Chunk.objects.filter(document_id="open").values_list("project_id", flat=True)) == [None]
