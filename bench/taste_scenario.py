"""The taste scenario through the real API on PostgreSQL, and a leak check across users and projects.

    .venv/bin/python bench/taste_scenario.py

On a scratch PostgreSQL database, with Redis as the cache (as in production), through Django's
full request path with user API keys:

1. A user drafts five emails with plugin email / command draft, accepts the first and shortens
   the other four: the candidate pattern's instruction and word limit. Two accepted runs with the
   pattern applied: its confidence before and after. Three overrides in a row: its status.
   Consistency (issue 10), each on its own plugin: 3 shortened then 3 lengthened runs, and the two
   directions alternating (the patterns applied to the next run: never two contradicting); a
   closing line deleted 3 times (the instruction; no length pattern); a re-run without
   parameters; one shortening on each of three commands of a plugin (the plugin-wide pattern,
   and the command it is applied to); a successful run not corrected before the next run (the
   confirmations it adds, counted once).
2. Two users, two projects (both members of both): each has private preferences, memories and a
   taste pattern, and shares one memory with one project (approved and applied by an admin).
   Each builds context in every project and in none; a leak is any item of the other user's
   private ones, or of the other project, in the response. A project neither belongs to must
   be refused. Goal: 0 leaks.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import django_in_scratch

DRAFT = (
    "Dear Ms Jones,\n\nThank you for your message of last week about the quarterly review. "
    + "I wanted to follow up with a detailed summary of everything we discussed in the meeting. " * 12
    + "\n\nKind regards,\nSam"
)
SHORT = "Dear Ms Jones,\n\nThanks for your message. Summary attached; happy to discuss on Friday.\n\nKind regards,\nSam"
LONGER = SHORT + " Here is everything in detail." * 10
CLOSING = "Let me know if you have questions."
WITH_CLOSING = f"Hi Priya,\n\nThe revised quote for the kitchen refit is attached.\n\n{CLOSING}\n\nBest,\nOmar"


class Api:
    """A Django test client speaking JSON with one user's API key; every non-2xx is a failure."""

    def __init__(self, raw_key: str) -> None:
        from django.test import Client

        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {raw_key}", SERVER_NAME="127.0.0.1")

    def post(self, path: str, body: dict | None = None, expect: int = 201) -> dict:
        response = self.client.post(path, json.dumps(body or {}), content_type="application/json")
        assert response.status_code == expect, (path, response.status_code, response.content)
        return response.json()

    def get(self, path: str, params: dict | None = None, expect: int = 200) -> dict:
        response = self.client.get(path, params or {})
        assert response.status_code == expect, (path, response.status_code, response.content)
        return response.json()


def run(api: Api, output: str = DRAFT, plugin: str = "email", command: str = "draft", **extra) -> dict:
    return api.post("/api/v1/commands/runs", {"plugin": plugin, "command": command, "output": output, **extra})


def decide(api: Api, run_id: str, decision: str, **extra) -> dict:
    return api.post("/api/v1/commands/decisions", {"run_id": run_id, "decision": decision, **extra})


def pattern_of(api: Api, pattern_id: int) -> dict:
    return next(p for p in api.get("/api/v1/taste-patterns")["taste_patterns"] if p["id"] == pattern_id)


def scenario(api: Api) -> None:
    print("1. Taste scenario (plugin email, command draft)")
    for i in range(5):
        ran = run(api)
        if i == 0:
            decide(api, ran["run_id"], "accepted")
        else:
            decide(api, ran["run_id"], "edited", edited_output=f"{SHORT} ({i})")
    patterns = api.get("/api/v1/taste-patterns")["taste_patterns"]
    assert len(patterns) == 1, patterns
    pattern = patterns[0]
    limit = re.search(r"under (\d+) words", pattern["instruction"])
    print(f"   shortened 4 of 5 drafts -> {pattern['status']} pattern #{pattern['id']}")
    print(f"   instruction: {pattern['instruction']}")
    print(f"   word limit:  {limit.group(1) if limit else '(none)'}")
    print(f"   evidence:    {pattern['description']}")
    print(f"   notice:      {pattern['notice']}")

    before = pattern["confidence"]
    after = []
    for _ in range(2):
        ran = run(api, output=SHORT)
        assert [p["id"] for p in ran["applied"]] == [pattern["id"]], ran
        decide(api, ran["run_id"], "accepted")
        after.append(pattern_of(api, pattern["id"]))
    print(
        f"   2 accepted runs: confidence {before:.4f} -> {after[0]['confidence']:.4f} -> {after[1]['confidence']:.4f}"
        f" (status {after[-1]['status']}, {after[-1]['confirmations']} confirmations)"
    )

    for i in range(3):
        ran = run(api, output=SHORT)
        applied = [p["id"] for p in ran["applied"]]
        result = decide(api, ran["run_id"], "edited", edited_output=LONGER)
        state = pattern_of(api, pattern["id"])
        print(
            f"   override {i + 1}: applied {applied == [pattern['id']]}, overridden {result['overridden']}, "
            f"status {state['status']}"
        )
    final = pattern_of(api, pattern["id"])
    applied_now = [p["id"] for p in run(api)["applied"]]
    print(
        f"   after 3 overrides in a row: status {final['status']} ({final['rejected_reason']}), "
        f"{final['rejections']} rejections; applied to the next run: {pattern['id'] in applied_now}"
    )
    consistency(api)


def applied_directions(api: Api, plugin: str, command: str = "draft") -> list[str]:
    return [f"{p['correction_type']}:{p['direction']}" for p in run(api, plugin=plugin, command=command)["applied"]]


def consistency(api: Api) -> None:
    print("   consistency (issue 10):")
    # Each edit from the other text: DRAFT cut to SHORT, or SHORT written out to LONGER.
    shown = {SHORT: DRAFT, LONGER: SHORT}
    for after in [SHORT] * 3 + [LONGER] * 3:
        decide(api, run(api, plugin="memo", output=shown[after])["run_id"], "edited", edited_output=after)
    live = [p for p in api.get("/api/v1/taste-patterns")["taste_patterns"] if p["plugin"] == "memo"]
    states = ", ".join(f"{p['direction']} {p['status']}/{p['rejected_reason'] or '-'}" for p in live)
    print(f"   3 shortened then 3 lengthened: patterns [{states}]; applied next: {applied_directions(api, 'memo')}")
    for after in [SHORT, LONGER] * 3:
        decide(api, run(api, plugin="note", output=shown[after])["run_id"], "edited", edited_output=after)
    made = [p for p in api.get("/api/v1/taste-patterns")["taste_patterns"] if p["plugin"] == "note"]
    print(
        f"   shortened and lengthened alternately x3: {len(made)} patterns; "
        f"applied next: {applied_directions(api, 'note')}"
    )

    for _ in range(3):
        ran = run(api, output=WITH_CLOSING, plugin="mail")
        result = decide(api, ran["run_id"], "edited", edited_output=WITH_CLOSING.replace(f"{CLOSING}\n\n", ""))
    kinds = [c["type"] for c in result["corrections"]]
    mail = [p for p in api.get("/api/v1/taste-patterns")["taste_patterns"] if p["plugin"] == "mail"]
    print(f"   closing line deleted x3: corrections {kinds}; patterns {[p['instruction'] for p in mail]}")

    ran = run(api, plugin="mail")
    plain = decide(api, ran["run_id"], "rerun")
    print(f"   re-run without parameters: 201, overridden {plain['overridden']} (the applied line pattern)")

    for command in ("note", "log", "summary"):
        decide(api, run(api, plugin="crm", command=command)["run_id"], "edited", edited_output=SHORT)
    wide = [p for p in api.get("/api/v1/taste-patterns")["taste_patterns"] if p["plugin"] == "crm"]
    print(
        f"   one shortening on each of crm note/log/summary: {[(p['command'], p['instruction']) for p in wide]}; "
        f"applied to crm/forward: {applied_directions(api, 'crm', 'forward')}"
    )

    first = run(api, plugin="crm", command="forward", output=SHORT, succeeded=True)
    second = run(api, plugin="crm", command="forward", output=SHORT)
    third = run(api, plugin="crm", command="forward", output=SHORT)
    confirmations = pattern_of(api, wide[0]["id"])["confirmations"] if wide else None
    print(
        f"   a successful run not corrected: confirmed by the next run {second['confirmed']}, by the one after "
        f"{third['confirmed']}; pattern confirmations {confirmations} (applied to the run: {len(first['applied'])})"
    )


def leaks(admin: Api, users: dict[str, Api], projects: list[str], outsider_project: str) -> None:
    print("2. Private preferences and memories across two users and two projects")
    from accounts.models import User
    from learning.analyzer.base import MemoryFinding
    from learning.services.memories import memory_remember

    secret: dict[str, dict[str, set[str]]] = {}  # owner -> the ids and texts only they may see
    own_texts: dict[str, set[str]] = {}  # everything an owner may see of their own, anywhere
    project_items: dict[str, dict[str, set[str]]] = {}  # project -> what only its members see, there
    sharer: dict[str, str] = {}
    for index, (name, api) in enumerate(users.items()):
        ids, texts = set(), set()
        for j, (category, slug) in enumerate((("tone", "dry humour"), ("format", "numbered steps"))):
            description = f"{name} private preference {j}: {slug}"
            body = {"category": category, "preference": slug, "description": description}
            row = api.post("/api/v1/preferences", body)
            ids.add(f"preference:{row['id']}")
            texts.add(description)
        owner = User.objects.get(username=name)
        for j, place in enumerate(("Lisbon", "Porto")):
            content = f"{name} private memory {j}: my sister lives in {place}"
            memory = memory_remember(
                owner=owner, finding=MemoryFinding(kind="fact", content=content, confidence=0.9), source_message=None
            )
            ids.add(f"memory:{memory.pk}")
            texts.add(content)
        plugin = f"notes{index}"
        for i in range(3):
            ran = run(api, plugin=plugin, command="summary")
            decide(api, ran["run_id"], "edited", edited_output=f"{SHORT} ({name} {i})")
        for pattern in api.get("/api/v1/taste-patterns")["taste_patterns"]:
            if pattern["plugin"] == plugin:
                ids.add(f"taste_pattern:{pattern['id']}")
                texts.add(pattern["instruction"])

        # Each user shares one more private memory with "their" project (the API proposes it, an
        # admin approves and applies it): only that project sees the shared copy.
        project = projects[index]
        content = f"{project} project knowledge from {name}: the release train leaves on Thursdays"
        original = memory_remember(
            owner=owner, finding=MemoryFinding(kind="context", content=content, confidence=0.9), source_message=None
        )
        proposal = api.post(f"/api/v1/memories/{original.pk}/share", {"visibility": "project", "project": project})
        admin.post(f"/api/v1/promotions/{proposal['promotion_id']}/approve", expect=200)
        applied = admin.post(f"/api/v1/promotions/{proposal['promotion_id']}/apply", expect=200)
        sharer[project] = name
        project_items[project] = {"ids": {f"memory:{applied['destination_record_id']}"}, "texts": {content}}
        ids.add(f"memory:{original.pk}")  # the private original stays the owner's
        secret[name] = {"ids": ids, "texts": texts}
        own_texts[name] = texts | {content}

    builds = found = own_seen = project_seen = project_expected = refused = 0
    for index, (name, api) in enumerate(users.items()):
        for project in [None, *projects]:
            for surface, extra in (("chat", {}), ("command", {"plugin": f"notes{index}", "command": "summary"})):
                params = {"surface": surface, **extra, **({"project": project} if project else {})}
                context = api.get("/api/v1/context", params)
                builds += 1
                seen_ids = {
                    f"{kind}:{item['id']}"
                    for kind, key in (
                        ("preference", "preferences"),
                        ("memory", "memories"),
                        ("taste_pattern", "taste_patterns"),
                    )
                    for item in context[key]
                }
                forbidden_ids, forbidden_texts = set(), set()
                for other, items in secret.items():
                    if other != name:
                        forbidden_ids |= items["ids"]
                        forbidden_texts |= items["texts"]
                for other_project, items in project_items.items():
                    if other_project != project:
                        forbidden_ids |= items["ids"]
                        forbidden_texts |= items["texts"] - own_texts[name]
                leaked = (seen_ids & forbidden_ids) | {t for t in forbidden_texts if t in context["text"]}
                found += len(leaked)
                for item in sorted(leaked):
                    print(f"   LEAK: {name} in project {project or '-'} ({surface}) sees {item}")
                own_seen += len(seen_ids & secret[name]["ids"])
                if project and sharer[project] != name:  # the sharer sees their private original instead
                    project_expected += 1
                    project_seen += project_items[project]["ids"] <= seen_ids
        outside = api.client.get("/api/v1/context", {"project": outsider_project})
        refused += outside.status_code == 403
        if outside.status_code != 403:
            found += 1
            print(f"   LEAK: {name} built context in {outsider_project} ({outside.status_code})")
    scopes = ", ".join(["none", *projects])
    print(
        f"   {len(users)} users x {len(projects) + 1} scopes ({scopes}) x 2 surfaces (chat, command): "
        f"{builds} context builds"
    )
    print(
        f"   own private items seen across them: {own_seen}; the other member's builds that saw a "
        f"project's shared memory there: {project_seen}/{project_expected}"
    )
    print(f"   context in a project neither belongs to ({outsider_project}): refused (403) {refused}/{len(users)}")
    print(f"   leaks found: {found}" + ("  (goal met)" if found == 0 else "  (goal NOT met)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench_taste")
    parser.add_argument("--cache", default="redis://127.0.0.1:6379/13")
    args = parser.parse_args()

    django_in_scratch(args.pg, args.database, cache=args.cache)
    from accounts.models import User
    from accounts.services import api_key_create, project_ensure, project_member_add, user_ensure

    admin = User.objects.get(username="bench")
    users, projects = {}, ["alpha", "beta"]
    for name in ("ann", "bob"):
        user = user_ensure(username=name, password=secrets.token_urlsafe(16))
        for slug in projects:
            project_member_add(project=project_ensure(slug=slug, name=slug.title()), user=user)
        users[name] = Api(api_key_create(owner=user, name="bench")[1])
    project_ensure(slug="gamma", name="Gamma")
    sam = user_ensure(username="sam", password=secrets.token_urlsafe(16))

    print(f"PostgreSQL database {args.database}, cache {args.cache}; through the API with user keys\n")
    scenario(Api(api_key_create(owner=sam, name="bench")[1]))
    print()
    leaks(Api(api_key_create(owner=admin, name="bench-admin")[1]), users, projects, "gamma")


if __name__ == "__main__":
    main()
