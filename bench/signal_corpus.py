"""A seeded generator of labelled project documents (e-mails, meeting notes, chat threads) for
measuring signal extraction (bench/extraction.py) and compile throughput (bench/compile_throughput.py).

Every sentence carries its label: a card type (decision, commitment, open_question, schedule,
financial, blocker, risk, task, update) or None (greetings, context, filler). Each type is written in
several *phrasing families* (FAMILIES): a family is a way of saying things (formal e-mail prose,
terse notes, chat, indirect/hedged), with its own words, so that an extractor tuned on some families
can be reported on the others. The slots (people, firms, work items, dates, amounts) are drawn from
the seed; nothing here is read by the extractor.

    from bench.signal_corpus import corpus
    documents = corpus(seed=7, families=("formal", "chat"), documents=200)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

FAMILIES = ("formal", "terse", "chat", "indirect")

PEOPLE = [
    "Maria Lopez",
    "Dana Whitfield",
    "Tom Becker",
    "Priya Natarajan",
    "Kwame Mensah",
    "Sofia Rossi",
    "Liam O'Connor",
    "Hannah Schmidt",
    "Jorge Alvarez",
    "Mei Chen",
    "Olu Adeyemi",
    "Grace Kim",
]
FIRMS = ["Apex Steel", "Northline Glazing", "Brightwater MEP", "Keller Concrete", "Summit Elevators", "Vega Roofing"]
ITEMS = [
    "the curtain wall panels",
    "the level 3 slab pour",
    "the rooftop HVAC units",
    "the structural steel for the east wing",
    "the elevator shaft framing",
    "the fire sprinkler rough-in",
    "the basement waterproofing",
    "the precast stair units",
    "the electrical switchgear",
    "the facade mock-up",
]
SHORT_ITEMS = ["steel", "glazing", "switchgear", "HVAC", "sprinklers", "waterproofing", "precast stairs", "facade"]
DOCS = [
    "the revised shop drawings",
    "the RFI response",
    "the updated schedule",
    "the submittal log",
    "the site logistics plan",
]
OPTIONS = ["the precast option", "the cheaper glazing spec", "Option B", "the steel alternative", "the phased handover"]
REASONS = ["the permit", "the utility connection", "the inspection sign-off", "the crane certification"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["March", "April", "May", "June", "September", "October"]


def _first(name: str) -> str:
    return name.split()[0]


def _date(rng: random.Random) -> str:
    style = rng.randrange(4)
    if style == 0:
        return rng.choice(WEEKDAYS)
    if style == 1:
        return f"{rng.choice(MONTHS)} {rng.randint(2, 28)}"
    if style == 2:
        return f"{rng.randint(1, 12)}/{rng.randint(1, 28)}"
    return rng.choice(["end of the month", "next week", "tomorrow", "end of next week"])


def _amount(rng: random.Random) -> str:
    style = rng.randrange(4)
    if style == 0:
        return f"${rng.randint(12, 480)},{rng.randint(0, 999):03d}"
    if style == 1:
        return f"${rng.randint(15, 900)}k"
    if style == 2:
        return f"{rng.randint(20, 300)},000 USD"
    return f"€{rng.randint(2, 9)}.{rng.randint(1, 9)} million"


# Templates per card type and family. Slots: {p} person, {p2} another person, {f} firm, {i} item,
# {s} short item, {d} date, {a} amount, {doc} a document, {o} an option, {r} a reason, {n} a number.
TEMPLATES: dict[str | None, dict[str, list[str]]] = {
    "decision": {
        "formal": [
            "Following the review, we have decided to proceed with {o} for {i}.",
            "The owner approved {o} at yesterday's meeting.",
            "It was agreed that {f} will take over {i}.",
        ],
        "terse": [
            "Decision: go with {o}.",
            "Agreed - {o} for {s}.",
            "Approved: {o} ({s}).",
        ],
        "chat": [
            "ok we're going with {o}, final call",
            "client signed off on {o} btw",
            "so it's settled, {o} it is",
        ],
        "indirect": [
            "After some back and forth the team landed on {o}.",
            "{p} confirmed that {o} is the way forward for {i}.",
            "The design team has chosen {o} over the original scheme.",
        ],
    },
    "commitment": {
        "formal": [
            "I will send {doc} to the design team by {d}.",
            "We will deliver {i} no later than {d}.",
            "{f} has committed to completing {i} by {d}.",
        ],
        "terse": [
            "{f} commits to {s} delivery {d}.",
            "{p}: will issue {doc} {d}.",
            "Promised by {f}: {s} on site {d}.",
        ],
        "chat": [
            "I'll get {doc} over to you by {d}",
            "we'll have the {s} crew back on site {d}, promise",
            "leave it with me, I'll sort {doc} by {d}",
        ],
        "indirect": [
            "You have our word that {i} will be complete by {d}.",
            "{f} guaranteed the {s} would be on site by {d}.",
            "{p} undertook to resubmit {doc} by {d}.",
        ],
    },
    "open_question": {
        "formal": [
            "Could you confirm whether {i} require a separate permit?",
            "Has the structural engineer reviewed {doc}?",
            "Which option does the owner prefer for {i}?",
        ],
        "terse": [
            "Open: who signs off {s}?",
            "TBD - fire rating of {s}.",
            "Q: is {doc} approved?",
        ],
        "chat": [
            "anyone know if {i} got inspected?",
            "wait, who's paying for the {s} rework?",
            "do we even have {doc} yet?",
        ],
        "indirect": [
            "It is still unclear whether {f} can source {s} locally.",
            "Nobody has confirmed who owns the {s} interface.",
            "We still don't know if {r} covers {i}.",
        ],
    },
    "schedule": {
        "formal": [
            "The delivery of {i} has slipped by {n} weeks.",
            "We are now {n} weeks behind on {i}.",
            "{i} will be delayed until {d} at the earliest.",
        ],
        "terse": [
            "{s}: {n} wks late.",
            "Milestone at risk - {s} pushed to {d}.",
            "{s} install slipping, now {d}.",
        ],
        "chat": [
            "{s} guys just told me they're pushed back to {d}",
            "looks like {s} is running late again, maybe {n} weeks",
            "ugh {s} won't be here till {d}",
        ],
        "indirect": [
            "At this rate the handover date cannot be met.",
            "The critical path now runs through {i}, with no float left.",
            "Lead times on {s} have stretched to {n} weeks, beyond the programme.",
        ],
    },
    "financial": {
        "formal": [
            "The change order for {i} adds {a} to the contract sum.",
            "We expect a cost overrun of {a} on {i}.",
            "{f} has submitted a claim for {a} for standby time.",
        ],
        "terse": [
            "CO #{n}: {s} +{a}.",
            "{s} over budget by {a}.",
            "Backcharge to {f}: {a}.",
        ],
        "chat": [
            "heads up, {f} wants another {a} for the {s}",
            "the {s} quote came in {a} higher than we budgeted",
            "that redesign is gonna cost us {a} at least",
        ],
        "indirect": [
            "Our exposure on the {s} dispute is roughly {a}.",
            "Contingency is down to {a} after the {s} variation.",
            "If the claim holds, we are looking at {a} unrecovered.",
        ],
    },
    "blocker": {
        "formal": [
            "Work on {i} cannot start until {r} is issued.",
            "{i} is on hold pending {r}.",
            "We are unable to proceed with {i} without {doc}.",
        ],
        "terse": [
            "BLOCKED: {s} - waiting on {r}.",
            "{s} stopped, no {doc}.",
            "Blocker: {r} for {s}.",
        ],
        "chat": [
            "we're stuck on {s} till {r} comes through",
            "can't do anything on {s}, still no {doc}",
            "{s} crew standing around again, waiting on {r}",
        ],
        "indirect": [
            "Nothing further can happen on {i} while {r} remains outstanding.",
            "Progress on {i} is held up by the missing {r}.",
            "The {s} team has been idle since {r} was withdrawn.",
        ],
    },
    "risk": {
        "formal": [
            "There is a risk that {i} will not pass inspection.",
            "We are concerned that {f} may not have enough crews for {i}.",
            "Ground conditions could affect {i}.",
        ],
        "terse": [
            "Risk: {s} supplier insolvency.",
            "Concern - {s} quality.",
            "Potential clash between {s} and ductwork.",
        ],
        "chat": [
            "worried the {s} won't match the approved sample",
            "tbh I think {f} might walk off the job",
            "if it rains {d} the {s} could get damaged",
        ],
        "indirect": [
            "Should the {s} supplier fail, there is no second source.",
            "Corrosion in the existing {s} may prove worse than surveyed.",
            "The new labour agreement threatens crew availability for {i}.",
        ],
    },
    "task": {
        "formal": [
            "{p} to issue {doc} to the consultants by {d}.",
            "Please arrange the inspection of {i} for {d}.",
            "{p2}, could you update {doc} before {d}?",
        ],
        "terse": [
            "Action: {p} - chase {f} on {s}.",
            "AI: {p} to circulate {doc} {d}.",
            "TODO {p}: book crane for {s}.",
        ],
        "chat": [
            "@{fp} can you ping {f} about the {s}?",
            "{fp} pls send {doc} when you get a sec",
            "someone needs to call {f} today re {s}",
        ],
        "indirect": [
            "{p} has been asked to coordinate the {s} shutdown with {f}.",
            "It falls to {p} to get the {s} permit application filed by {d}.",
            "The responsibility for reviewing {doc} sits with {p}.",
        ],
    },
    "update": {
        "formal": [
            "{i} were completed on schedule last week.",
            "The inspection of {i} passed without comments.",
            "{f} finished installing {i} yesterday.",
        ],
        "terse": [
            "{s} - done.",
            "{s}: {n}0% complete.",
            "Delivered: {s}.",
        ],
        "chat": [
            "{s} is in! looks great",
            "just poured the last section, all good",
            "inspector signed off the {s} this morning",
        ],
        "indirect": [
            "As of today the {s} works stand at roughly {n}0 percent.",
            "The last of the {s} arrived on site this morning.",
            "{i} have now been handed over to the owner.",
        ],
    },
    None: {
        "formal": [
            "Please find attached the minutes of the meeting.",
            "The site office is located at the north gate.",
            "Kind regards to the whole team.",
        ],
        "terse": [
            "Attendees: {p}, {p2}.",
            "Location: site office.",
            "Next meeting as usual.",
        ],
        "chat": [
            "morning all",
            "lol yes",
            "thanks {fp}!",
        ],
        "indirect": [
            "The weather was mild for most of the week.",
            "As discussed, the usual distribution list applies.",
            "The previous minutes were accepted as a true record.",
        ],
    },
}


@dataclass
class LabelledSentence:
    text: str
    label: str | None
    family: str
    owner: str = ""  # the person or firm the template names as acting, when it names one


@dataclass
class LabelledDocument:
    id: str
    kind: str  # email, meeting_notes, chat
    source_system: str
    title: str
    created_at: datetime
    sentences: list[LabelledSentence] = field(default_factory=list)
    participants: list[str] = field(default_factory=list)
    text: str = ""


def _fill(template: str, rng: random.Random) -> tuple[str, str]:
    person, other = rng.sample(PEOPLE, 2)
    firm = rng.choice(FIRMS)
    slots = {
        "p": person,
        "p2": other,
        "fp": _first(person),
        "f": firm,
        "i": rng.choice(ITEMS),
        "s": rng.choice(SHORT_ITEMS),
        "d": _date(rng),
        "a": _amount(rng),
        "doc": rng.choice(DOCS),
        "o": rng.choice(OPTIONS),
        "r": rng.choice(REASONS),
        "n": str(rng.randint(2, 9)),
    }
    text = template.format(**slots)
    # The acting owner, where the sentence names one: the slot that opens it or follows an assignment.
    owner = ""
    for key in ("p", "fp", "p2", "f"):
        slot = "{" + key + "}"
        lead = ("Action: " + slot, "AI: " + slot, "TODO " + slot, "@" + slot, "sits with " + slot, "falls to " + slot)
        if template.startswith(slot) or any(marker in template for marker in lead):
            owner = slots[key]
            break
    text = text[0].upper() + text[1:] if not text[0].isupper() and not template.startswith(("{", "@")) else text
    if template.startswith(("ok", "so", "we", "wait", "anyone", "do ", "looks", "ugh", "heads", "the ", "that")):
        text = text[0].lower() + text[1:]  # chat stays lower case
    return text, owner


def _sentence(rng: random.Random, label: str | None, family: str) -> LabelledSentence:
    text, owner = _fill(rng.choice(TEMPLATES[label][family]), rng)
    return LabelledSentence(text=text, label=label, family=family, owner=owner)


def _render(document: LabelledDocument, rng: random.Random) -> str:
    lines: list[str] = []
    if document.kind == "email":
        lines.append(f"Hi {_first(rng.choice(PEOPLE))},")
        lines.append("")
        lines.extend(s.text for s in document.sentences)
        lines.extend(["", "Best,", document.participants[0]])
    elif document.kind == "meeting_notes":
        lines.append(f"Site meeting notes - {document.created_at:%d %b %Y}")
        lines.extend(f"- {s.text}" for s in document.sentences)
    else:
        clock = document.created_at
        for sentence in document.sentences:
            clock += timedelta(minutes=rng.randint(1, 40))
            speaker = _first(rng.choice(document.participants))
            lines.append(f"[{clock:%H:%M}] {speaker}: {sentence.text}")
    return "\n".join(lines)


def corpus(
    *,
    seed: int,
    families: tuple[str, ...] = FAMILIES,
    documents: int = 200,
    signal_share: float = 0.6,
    start: datetime | None = None,
) -> list[LabelledDocument]:
    """``documents`` labelled documents drawn from ``seed``, their sentences written only in ``families``."""
    rng = random.Random(seed)
    start = start or datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    types = [label for label in TEMPLATES if label is not None]
    out = []
    for number in range(documents):
        kind = rng.choice(["email", "meeting_notes", "chat"])
        document = LabelledDocument(
            id=f"s{seed}-{number}",
            kind=kind,
            source_system={"email": "email", "meeting_notes": "meetings", "chat": "chat"}[kind],
            title=f"{rng.choice(SHORT_ITEMS).title()} {rng.choice(['update', 'coordination', 'notes', 'thread'])}",
            created_at=start + timedelta(hours=rng.randint(0, 24 * 60)),
            participants=rng.sample(PEOPLE, 3),
        )
        for _ in range(rng.randint(3, 8)):
            label = rng.choice(types) if rng.random() < signal_share else None
            document.sentences.append(_sentence(rng, label, rng.choice(families)))
        document.text = _render(document, rng)
        out.append(document)
    return out
