"""manage.py import_documents PATH [--project SLUG]: JSON lines, or a folder of text files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.actors import Actor
from config.exceptions import ApplicationError
from retrieval.services import DocumentInput, ImportReport, documents_import

TEXT_SUFFIXES = {".txt", ".md", ".rst", ".text"}


class Command(BaseCommand):
    help = (
        "Import documents from a JSON-lines file (one object per line: id, text or raw_text, title, url, metadata) "
        "or from a folder of .txt/.md files (id: the relative path). Unchanged documents cost nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", default=None, help="slug of the project the documents belong to")
        parser.add_argument("--batch", type=int, default=64, help="documents per transaction")

    def handle(self, *args, **options) -> None:
        path: Path = options["path"]
        if not path.exists():
            raise CommandError(f"{path} does not exist.")
        documents = list(self._read(path, options["project"]))
        empty = [d.id for d in documents if not d.raw_text.strip()]
        documents = [d for d in documents if d.raw_text.strip()]
        total = ImportReport()
        batch = max(1, options["batch"])
        with tqdm(total=len(documents), unit="doc", disable=None) as progress:
            for start in range(0, len(documents), batch):
                chunk = documents[start : start + batch]
                try:
                    report = documents_import(actor=Actor.for_system(), items=chunk)
                except ApplicationError as exc:
                    raise CommandError(exc.message) from exc
                for name in vars(total):
                    setattr(total, name, getattr(total, name) + getattr(report, name))
                progress.update(len(chunk))
        self.stdout.write(
            f"{total.created} created, {total.updated} updated, {total.unchanged} unchanged; "
            f"{total.chunks_embedded} passages embedded, {total.chunks_reused} reused"
            + (
                f"; {total.chunks_kept} passages kept their chunk, {total.chunks_removed} chunks removed, "
                f"{total.weights_orphaned} weights orphaned"
                if total.updated
                else ""
            )
            + (f"; {len(empty)} skipped for having no text ({', '.join(empty[:5])})" if empty else "")
        )

    def _read(self, path: Path, project: str | None) -> Iterator[DocumentInput]:
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES and p.is_file()):
                yield DocumentInput(
                    id=str(file.relative_to(path)),
                    title=file.stem,
                    raw_text=file.read_text(errors="replace"),
                    project_slug=project,
                    source_type="file",
                )
            return
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                text = row.get("raw_text", row.get("text"))
                if not isinstance(row, dict) or not isinstance(text, str) or "id" not in row:
                    raise ValueError("needs id and text")
            except (ValueError, AttributeError) as exc:
                raise CommandError(f"{path}:{number}: not a document ({exc}).") from exc
            yield DocumentInput(
                id=str(row["id"]),
                raw_text=text,
                title=str(row.get("title", "")),
                url=str(row.get("url", "")),
                metadata=row.get("metadata") or {},
                project_slug=row.get("project", project),
                source_type=str(row.get("source_type", "text")),
            )
