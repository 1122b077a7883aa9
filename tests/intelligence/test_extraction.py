"""Signal extraction on sentences the extractor was not tuned on, and the OpenAI-compatible path
through the real openai client against a local server speaking the same API."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from intelligence.models import InsightCard, SourceSignalCandidate
from intelligence.services.compile import document_compile
from intelligence.services.extraction import (
    LocalExtractor,
    OpenAIExtractor,
    amounts_of,
    due_of,
    get_extractor,
    owner_of,
    sentences_of,
)
from tests import factories
from tests.learning.fake_openai import FakeOpenAI, Reply

# Written for this test, after the extractor's cues were set, and never used to tune them: other
# trades, other words, other sentence shapes than bench/signal_corpus.py's templates.
UNSEEN = [
    ("After the site walk we settled on keeping the existing stair cores.", "decision"),
    ("The owner's rep signed off on the substitute light fittings this morning.", "decision"),
    ("Management opted for the two-shift pattern from next month.", "decision"),
    ("Irene will circulate the commissioning plan by Wednesday.", "commitment"),
    ("We guarantee the lift will be certified before handover.", "commitment"),
    ("Is the sprinkler tank still on order or has it shipped?", "open_question"),
    ("Nobody knows yet who pays for moving the gas main.", "open_question"),
    ("Whether the neighbours' party wall award covers the basement is still unresolved.", "open_question"),
    ("The mechanical first fix is slipping and will miss the April milestone.", "schedule"),
    ("Plasterboard deliveries are running two weeks late.", "schedule"),
    ("Extra dewatering has added $36,000 to the groundworks package.", "financial"),
    ("The landscaping quote is EUR 40,000 more than the allowance.", "financial"),
    ("Painting is on hold until the moisture readings come down.", "blocker"),
    ("The fit-out team is blocked by the missing ceiling grid.", "blocker"),
    ("The temporary works design might not cope with the higher wind loads.", "risk"),
    ("There is a concern that the sub-base will settle under the crane pad.", "risk"),
    ("Action: Farid to photograph the defects list before Friday.", "task"),
    ("Can you send the as-built drawings to the facilities manager?", "task"),
    ("The drainage connection to the main sewer has been completed.", "update"),
    ("Level 4 formwork was stripped yesterday.", "update"),
]
NOT_SIGNALS = [
    "Good afternoon everyone.",
    "Please see the agenda below.",
    "The coffee machine in the site hut is fixed.",
    "Regards, the site team",
    "Welcome to our new graduate engineer.",
    "Photos are in the shared folder.",
]


def test_held_out_sentences_are_typed_with_high_precision_and_nothing_from_filler():
    extractor = LocalExtractor()
    found = {}
    for text, _ in UNSEEN:
        signals = extractor.extract(text=text)
        found[text] = signals[0].signal_type if signals else None
    confident = [text for text, kind in found.items() if kind is not None]
    right = [text for text, label in UNSEEN if found[text] == label]
    assert len(right) / len(confident) >= 0.9, {t: found[t] for t in confident if t not in right}
    assert len(right) / len(UNSEEN) >= 0.6, {t: found[t] for t, _ in UNSEEN if t not in right}
    for text in NOT_SIGNALS:
        assert extractor.extract(text=text) == [], text


def test_low_confidence_is_discarded_not_guessed():
    strict = LocalExtractor(min_confidence=0.95)
    assert strict.extract(text="Heavy rain could flood the open excavation on the south side.") == []


def test_sentences_keep_their_excerpt_as_written_and_drop_prefixes():
    text = "[09:12] Maria: we're stuck on the glazing till the permit comes through\n- Decision: go with Option B."
    sentences = sentences_of(text)
    assert [s.statement for s in sentences] == [
        "we're stuck on the glazing till the permit comes through",
        "Decision: go with Option B.",
    ]
    assert sentences[0].speaker == "Maria"


def test_owner_due_date_and_amounts():
    monday = datetime(2026, 3, 2, 9, tzinfo=UTC)  # a Monday
    assert due_of("Send it by Friday.", observed_at=monday).date().isoformat() == "2026-03-06"
    assert due_of("Due March 20.", observed_at=monday).date().isoformat() == "2026-03-20"
    assert due_of("before the 14th", observed_at=monday).date().isoformat() == "2026-03-14"
    assert due_of("by end of the month", observed_at=monday).date().isoformat() == "2026-03-31"
    assert due_of("no date here", observed_at=monday) is None
    assert amounts_of("adds $84,500 and another $12k") == ((84500.0, 12000.0), "USD")
    assert amounts_of("about \u20ac1.2 million") == ((1_200_000.0,), "EUR")
    assert owner_of("Action: Farid to photograph the defects list.") == "Farid"
    assert owner_of("Rosa to book the concrete pump for the 18th.") == "Rosa"
    assert owner_of("I'll send the drawings tomorrow", speaker="Tom", signal_type="commitment") == "Tom"
    assert owner_of("The slab was poured.") == ""


def test_a_signal_carries_what_it_names():
    signals = LocalExtractor().extract(
        text="The electrician has invoiced an additional $12k for after-hours work.\n"
        "Action: Ben to send the updated door hardware schedule to the supplier by Friday.",
        observed_at=datetime(2026, 3, 2, 9, tzinfo=UTC),
    )
    by_type = {s.signal_type: s for s in signals}
    assert by_type["financial"].amounts == (12000.0,)
    assert by_type["task"].owner == "Ben"
    assert by_type["task"].due_at.date().isoformat() == "2026-03-06"
    assert by_type["task"].excerpt.startswith("Action: Ben")


# --- the OpenAI-compatible path ----------------------------------------------------------------


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def configured(fake, settings):
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_BASE_URL = fake.base_url
    settings.ANALYZER_TIMEOUT_SECONDS = 2.0
    settings.ANALYZER_MAX_RETRIES = 0
    settings.INTELLIGENCE_EXTRACTOR = "auto"
    return fake


DOCUMENT = "Hi all,\nThe crane permit is still pending with the city.\nMaria will send the lift plan by Friday.\nBest"


def test_settings_choose_the_extractor(configured, settings):
    assert isinstance(get_extractor(), OpenAIExtractor)
    settings.INTELLIGENCE_EXTRACTOR = "local"
    assert isinstance(get_extractor(), LocalExtractor)
    settings.INTELLIGENCE_EXTRACTOR = "auto"
    settings.OPENAI_API_KEY = ""
    assert isinstance(get_extractor(), LocalExtractor)


def test_the_openai_extractor_reads_a_strict_schema_and_keeps_only_real_excerpts(configured):
    configured.reply_json(
        {
            "signals": [
                {
                    "signal_type": "blocker",
                    "excerpt": "The crane permit is still pending with the city.",
                    "owner": None,
                    "due_date": None,
                    "amount": None,
                    "confidence": 0.8,
                },
                {
                    "signal_type": "commitment",
                    "excerpt": "Maria will send the lift plan by Friday.",
                    "owner": "Maria",
                    "due_date": "2026-03-06",
                    "amount": None,
                    "confidence": 0.9,
                },
                {  # a paraphrase, not in the document: no evidence, dropped
                    "signal_type": "risk",
                    "excerpt": "The crane might be late.",
                    "owner": None,
                    "due_date": None,
                    "amount": None,
                    "confidence": 0.9,
                },
                {  # below the confidence floor: dropped
                    "signal_type": "update",
                    "excerpt": "Hi all,",
                    "owner": None,
                    "due_date": None,
                    "amount": None,
                    "confidence": 0.1,
                },
            ]
        }
    )
    signals = get_extractor().extract(text=DOCUMENT)
    assert [(s.signal_type, s.owner) for s in signals] == [("blocker", ""), ("commitment", "Maria")]
    assert signals[1].due_at.date().isoformat() == "2026-03-06"
    assert signals[1].details["extractor"] == "openai:gpt-4.1-nano"
    request = configured.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["response_format"]["type"] == "json_schema"
    assert request["body"]["response_format"]["json_schema"]["strict"] is True
    assert json.loads(request["body"]["messages"][-1]["content"]) == {"document": DOCUMENT}


@pytest.mark.parametrize("reply", [Reply(content="not json"), Reply(status=500), Reply(content=json.dumps({}))])
def test_a_failing_server_falls_back_to_the_local_extractor_and_says_so(configured, reply):
    configured.replies.append(reply)
    signals = get_extractor().extract(text=DOCUMENT)
    assert signals
    assert {s.details["extractor"] for s in signals} == {"fallback:openai"}


@pytest.mark.django_db
def test_a_compile_job_with_the_openai_extractor_records_which_extractor_found_each_signal(configured):
    configured.reply_json(
        {
            "signals": [
                {
                    "signal_type": "blocker",
                    "excerpt": "The crane permit is still pending with the city.",
                    "owner": None,
                    "due_date": None,
                    "amount": None,
                    "confidence": 0.8,
                }
            ]
        }
    )
    doc = factories.DocumentFactory(project=factories.ProjectFactory(), raw_text=DOCUMENT)
    report = document_compile(document=doc)
    assert report.extractor == "openai:gpt-4.1-nano"
    signal = SourceSignalCandidate.objects.get()
    assert (signal.signal_type, signal.extractor, signal.status) == ("blocker", "openai:gpt-4.1-nano", "carded")
    assert InsightCard.objects.get().evidence.get().excerpt == "The crane permit is still pending with the city."
