"""A seeded, labelled corpus for attribution: construction projects as a general contractor sees
them, with the documents that reach it (e-mails, meeting notes, chat threads, files).

Each project has a profile (official name and aliases, client, site address, team, job number)
and, outside the profile, the nicknames its team actually uses ("the Dig", "Blue Box"): what no
profile knows and what reviewers' corrections can teach. Some people (a structural consultant, a
cost estimator) and one client work on several projects; some documents belong to no project
(newsletters, vendor offers, HR notes) and some mention a place that contains a project's name
("Oakland" beside "Oak Street"). Every document carries its true project (``truth``, None for no
project) and how it names it (``mode``).

    python bench/intelligence_corpus.py --seed 2 --documents 300   # prints a summary and samples
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

FIRST = (
    "Dana Lee Priya Marco Ines Tomas Ayla Jonas Keiko Samir Olga Ravi Nadia Felix Greta Hugo Amara Linus Maya Omar "
    "Rosa Teo Vera Yusuf Zoe Caleb Elif Ivan Lena Mateo Nora Pablo Rhea Soren Talia Uma Viktor Wren Xavier Yara"
).split()
LAST = (
    "Whitfield Okafor Lindqvist Moreau Tanaka Haddad Novak Brennan Castillo Duarte Eriksen Fontaine Gallagher Horvat "
    "Ibrahim Jansen Kowalski Laurent Mendes Nakamura Oyelaran Petrov Quinn Rossi Schmidt Varga Weber Young Zielinski"
).split()
PLACE = (
    "Harbour Oak Granite Willow Cedar Falcon Meridian Summit Lantern Copper Riverside Beacon Orchard Maple Kestrel "
    "Northgate Ashford Juniper Sterling Halcyon"
).split()
KIND = "Tower Lofts Yard Campus Library Clinic Depot Terrace Hall Exchange".split()
STREET = "Quay Mill Station Church Foundry Canal Market Bridge Wharf Tannery Abbey Rope".split()
CITY_TRAPS = {"Oak": "Oakland", "Cedar": "Cedarville", "Maple": "Mapleton", "Summit": "Summitview"}
CLIENTS = (
    "Northwind Estates,Blue Heron Capital,Civic Housing Trust,Alder & Finch Developments,Meridian Health Group,"
    "Stonebridge Council,Kingsway Universities,Lumen Retail Partners,Orbis Logistics,Parkside Homes"
).split(",")
NICKNAMES = (
    "the Dig,Blue Box,the Ship,Big Lego,the Wedge,Glasshouse,the Bunker,Phase Two,the Ark,Lighthouse,the Crate,"
    "Honeycomb,the Stack,Red Roof,the Canyon,Beehive,the Spire,Chimney Job,the Hive,Cheesegrater"
).split(",")
SHARED_ROLES = ("structural consultant", "cost estimator", "fire engineer", "planning advisor")
TRADES = "concrete,steel,curtain wall,mechanical,electrical,drywall,roofing,glazing,earthworks,plumbing".split(",")
TOPICS = (
    "pour sequence for level {n}",
    "RFI {n} on the {trade} interface",
    "change order {n} for {trade}",
    "submittal {n}: {trade} shop drawings",
    "delay notice from the {trade} subcontractor",
    "weekly progress and look-ahead",
    "inspection of {trade} works on level {n}",
    "crane booking for week {n}",
    "payment application {n}",
    "snag list walk-through, zone {n}",
)
BODY = (
    "The {trade} crew confirmed they can start on Monday if the inspection passes.",
    "Please review the attached drawings and send comments by Thursday.",
    "We are still waiting for the revised {trade} quote; the budget impact is about {amount}.",
    "The {role} asked for the calculations before the next pour.",
    "Site access will be restricted on Friday because of the delivery.",
    "Minutes of the coordination meeting are attached; actions are listed below.",
    "The programme slipped by {n} days because of the weather.",
    "Can you confirm the sequence for the {trade} works on level {n}?",
    "The client wants a cost report before signing the variation.",
    "Safety walk found two open edges on level {n}; fixed the same day.",
)
NOISE = (
    ("Industry newsletter: {trade} prices this quarter", "Market update on {trade} and steel prices. {extra}"),
    ("Webinar invitation: digital twins in construction", "Join our webinar on BIM and digital twins. {extra}"),
    ("Office: holiday rota", "Please add your holidays to the shared rota before the end of the month. {extra}"),
    ("Vendor offer: {trade} equipment rental", "Special rates on {trade} equipment this month. {extra}"),
    ("IT: password reset reminder", "Your password expires in 7 days. Reset it in the portal. {extra}"),
    ("Conference in {city}", "The regional construction conference takes place in {city} next month. {extra}"),
    ("Team lunch on Friday", "We are booking a table for the team lunch; reply if you join. {extra}"),
)


@dataclass
class Person:
    name: str
    email: str


@dataclass
class Project:
    slug: str
    name: str
    aliases: list[str]
    client: str
    address: str
    team: list[Person]
    job_number: str
    nicknames: list[str]  # what the team says; never in the profile
    folder: str  # where its files live (the nickname era's share: not named after the project)

    def profile(self, shared: list[Person]) -> dict[str, Any]:
        """The target profile as an admin would enter it (no nicknames)."""
        return {
            "aliases": self.aliases,
            "client_names": [self.client],
            "addresses": [self.address],
            "participants": [p.email for p in self.team] + [p.email for p in shared],
            "external_ids": [self.job_number],
        }


@dataclass
class Document:
    id: str
    title: str
    raw_text: str
    source_system: str
    url: str
    participants: list[str]
    metadata: dict[str, Any]
    created_at: datetime
    truth: str | None
    mode: str
    imported_project: str | None = None  # imported with an explicit project (not attributed)


@dataclass
class Corpus:
    seed: int
    projects: list[Project]
    shared_people: dict[str, list[Person]]  # project slug -> shared people who work on it
    documents: list[Document] = field(default_factory=list)


def _person(rng: random.Random, used: set[str], domain: str) -> Person:
    while True:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        if f"{first} {last}" not in used:
            used.add(f"{first} {last}")
            return Person(f"{first} {last}", f"{first.lower()}.{last.lower()}@{domain}")


def _projects(rng: random.Random, count: int) -> tuple[list[Project], dict[str, list[Person]]]:
    places = rng.sample(PLACE, count)
    kinds = rng.sample(KIND, count)
    clients = rng.sample(CLIENTS, count - 1)
    clients.append(clients[0])  # one client builds two of the projects
    nicknames = rng.sample(NICKNAMES, 2 * count)
    used: set[str] = set()
    projects = []
    for index, (place, kind) in enumerate(zip(places, kinds, strict=True)):
        name = f"{place} {kind}"
        street = f"{rng.randint(2, 240)} {rng.choice(STREET)} Street"
        slug = name.lower().replace(" ", "-")
        team = [_person(rng, used, "buildco.example") for _ in range(rng.randint(3, 5))]
        team.append(_person(rng, used, clients[index].split()[0].lower().replace("&", "") + ".example"))
        projects.append(
            Project(
                slug=slug,
                name=name,
                aliases=[name, place if rng.random() < 0.5 else f"{place} project"],
                client=clients[index],
                address=street,
                team=team,
                job_number=f"P-{rng.randint(1000, 9999)}",
                nicknames=nicknames[2 * index : 2 * index + 2],
                folder=f"/shares/jobs/{rng.randint(100, 999)}-{nicknames[2 * index].split()[-1].lower()}",
            )
        )
    shared = {p.slug: [] for p in projects}
    for role in SHARED_ROLES:
        person = _person(rng, used, f"{role.split()[0]}-partners.example")
        for project in rng.sample(projects, rng.randint(2, 3)):
            shared[project.slug].append(person)
    return projects, shared


def _fill(rng: random.Random, template: str, **extra: str) -> str:
    return template.format(
        n=rng.randint(1, 40),
        trade=rng.choice(TRADES),
        amount=f"${rng.randint(5, 250)}k",
        role=rng.choice(SHARED_ROLES),
        **extra,
    )


def generate(*, seed: int, projects: int = 6, documents: int = 300) -> Corpus:
    """A labelled corpus: ``documents`` documents over ``projects`` projects (about 12 % of no project)."""
    rng = random.Random(seed)
    specs, shared = _projects(rng, projects)
    corpus = Corpus(seed=seed, projects=specs, shared_people=shared)
    start = datetime(2026, 3, 2, 8, tzinfo=UTC)
    threads: dict[str, tuple[str, str]] = {}  # thread id -> (project slug, subject)
    for index in range(documents):
        when = start + timedelta(hours=index * 3 + rng.randint(0, 2))
        if rng.random() < 0.12:
            corpus.documents.append(_noise(rng, index, when, specs, shared))
            continue
        project = rng.choice(specs)
        corpus.documents.append(_project_document(rng, index, when, project, shared[project.slug], threads))
    return corpus


def _mention(rng: random.Random, project: Project, mode: str) -> str:
    if mode == "explicit_text":
        return f"Job {project.job_number}"
    if mode == "alias":
        return rng.choice(project.aliases)
    if mode == "address":
        return f"the site at {project.address}"
    if mode == "client":
        return project.client
    if mode == "nickname":
        return rng.choice(project.nicknames)
    return ""


def _project_document(
    rng: random.Random,
    index: int,
    when: datetime,
    project: Project,
    shared: list[Person],
    threads: dict[str, tuple[str, str]],
) -> Document:
    mode = rng.choices(
        ("explicit_meta", "explicit_text", "alias", "address", "client", "nickname", "people", "thread_reply"),
        weights=(8, 6, 26, 8, 5, 27, 10, 10),
    )[0]
    kind = rng.choices(("email", "meeting", "chat", "file"), weights=(45, 20, 20, 15))[0]
    people = rng.sample(project.team, k=min(len(project.team), rng.randint(1, 3)))
    if shared and rng.random() < 0.5:
        people.append(rng.choice(shared))
    if mode == "people":
        # Only people speak for the project: sometimes only the consultants who work on several.
        people = [rng.choice(shared)] if shared and rng.random() < 0.4 else people
    metadata: dict[str, Any] = {}
    topic = _fill(rng, rng.choice(TOPICS))
    mention = _mention(rng, project, mode)
    body = " ".join(_fill(rng, rng.choice(BODY)) for _ in range(rng.randint(2, 4)))
    url = ""
    title = topic.capitalize()
    if mode == "thread_reply" and any(slug == project.slug for slug, _ in threads.values()):
        thread_id, (_, subject) = rng.choice([(t, v) for t, v in threads.items() if v[0] == project.slug])
        title = f"Re: {subject}"
        metadata["thread_id"] = thread_id
        kind = "email"
    elif mode == "explicit_meta":
        metadata["job_number"] = project.job_number
    elif mention:
        if rng.random() < 0.5:
            title = f"{mention}: {topic}"
        else:
            lead = rng.choice(("This concerns {m}.", "For {m}:", "Update on {m}.", "Quick one about {m}."))
            body = f"{body} {lead.format(m=mention)} {_fill(rng, rng.choice(BODY))}"
    if kind == "email" and "thread_id" not in metadata:
        thread_id = f"t-{index}"
        metadata["thread_id"] = thread_id
        threads[thread_id] = (project.slug, title)
    if kind == "chat":
        metadata["channel"] = f"#{project.nicknames[0].split()[-1].lower()}-site" if mode == "nickname" else "#site-ops"
        body = "\n".join(f"{p.name.split()[0]}: {_fill(rng, rng.choice(BODY))}" for p in people) + f"\n{body}"
    if kind == "meeting":
        title = f"Meeting notes: {title}"
        body = f"Attendees: {', '.join(p.name for p in people)}.\n{body}"
    if kind == "file":
        folder = project.folder if mode in ("nickname", "people") else f"/projects/{project.slug}"
        url = f"{folder}/{rng.choice(['rfi', 'submittals', 'minutes', 'cost'])}/doc-{index}.pdf"
        metadata["path"] = url
    imported = project.slug if rng.random() < 0.05 else None
    return Document(
        id=f"s{index:05d}",
        title=title,
        raw_text=body,
        source_system={"email": "outlook", "meeting": "notes", "chat": "slack", "file": "sharepoint"}[kind],
        url=url,
        participants=[p.email for p in people] if kind in ("email", "meeting", "chat") else [],
        metadata=metadata,
        created_at=when,
        truth=project.slug,
        mode=mode if not imported else "imported",
        imported_project=imported,
    )


def _noise(
    rng: random.Random, index: int, when: datetime, projects: list[Project], shared: dict[str, list[Person]]
) -> Document:
    title, text = rng.choice(NOISE)
    trap = next((city for word, city in CITY_TRAPS.items() if any(p.name.startswith(word) for p in projects)), "")
    city = trap or rng.choice(["Leeds", "Lyon", "Porto", "Gdansk"])
    extra = f"Venue: {city} convention centre." if rng.random() < 0.5 else ""
    people = []
    consultants = [p for persons in shared.values() for p in persons]
    if consultants and rng.random() < 0.3:  # a consultant's newsletter: a shared person, no project
        people.append(rng.choice(consultants).email)
    return Document(
        id=f"s{index:05d}",
        title=_fill(rng, title, city=city),
        raw_text=_fill(rng, text, city=city, extra=extra),
        source_system="outlook",
        url="",
        participants=people or ["news@industry.example"],
        metadata={},
        created_at=when,
        truth=None,
        mode="noise",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--projects", type=int, default=6)
    parser.add_argument("--documents", type=int, default=300)
    args = parser.parse_args()
    corpus = generate(seed=args.seed, projects=args.projects, documents=args.documents)
    for project in corpus.projects:
        shared = ", ".join(p.name for p in corpus.shared_people[project.slug])
        print(f"{project.slug}: aliases {project.aliases}, nicknames {project.nicknames}, shared: {shared}")
    modes: dict[str, int] = {}
    for document in corpus.documents:
        modes[document.mode] = modes.get(document.mode, 0) + 1
    print("modes:", dict(sorted(modes.items())))
    for document in corpus.documents[:5]:
        print(document.id, document.truth, document.mode, document.title, "|", document.raw_text[:100])


if __name__ == "__main__":
    main()
