"""What the demo's people say, search for and work on (``demo_story`` plays it out day by day).

Plain data: the texts are chosen so that the real analyzer, search and scanners find in them what
the story needs (a preference, a memory, a weekly workflow; a current checklist ranked below an
outdated one; decisions and chat-only risks in meeting notes; a nickname in mail about the client).
"""

from __future__ import annotations

# --- Chat: (day, user, text, assistant reply or "") ---------------------------------------------------
# Days count back from today; the story stretches or squeezes them to the length asked for.
CHAT = (
    (33, "bob", "What's the difference between a rebase and a merge?", "A merge keeps both histories; a rebase..."),
    (30, "alice", "could you keep your answers short please", ""),
    (29, "alice", "How do I reverse a list in Python?", "Use reversed(items) or items[::-1]."),
    (28, "bob", "I have two young kids, so I leave at four on Tuesdays", ""),
    (27, "alice", "I'm a senior engineer, skip the basics in your answers", ""),
    (26, "alice", "Give me three names for a feature flag that hides the beta banner", "1. hide_beta_banner ..."),
    (24, "alice", "Our team's sprint demo is every second Thursday", ""),
    (23, "bob", "Write a status update for the data migration", "Status update: the data migration is on track. " * 6),
    (22, "alice", "Summarize the weekly sales report for the leadership team", "- Revenue up 4 %\n- Churn flat"),
    (21, "alice", "I follow a strict gluten-free diet", ""),
    (19, "alice", "Write a status update for the search beta", "Status update: the search beta is on track. " * 6),
    (17, "bob", "How do I undo the last commit but keep the changes?", "git reset --soft HEAD~1"),
    (15, "alice", "Can you summarize this week's sales report for leadership?", "Revenue grew 3 % this week, ..."),
    (15, "alice", "No, I said bullet points", ""),
    (13, "alice", "Please use British spelling from now on", ""),
    (11, "bob", "What does the on-call engineer hand over on Monday?", "Open incidents, pages of the week..."),
    (9, "alice", "Explain the CAP theorem in two sentences", "A distributed store can't be consistent..."),
    (8, "alice", "Summarize the sales report of this week for the leadership team please", "- Revenue up 2 %"),
    (6, "bob", "Suggest a name for the new staging cluster", "How about 'stage-north'?"),
    (5, "alice", "What is a good default timeout for an HTTP client?", "Connect 3 s, read 10-30 s."),
    (3, "alice", "Write a two-line summary of yesterday's incident review", "The cache outage lasted 14 minutes..."),
    (2, "bob", "How do I list the largest files in a git repository?", "git rev-list --objects --all | ..."),
    (1, "alice", "What should I check before a deploy?", "The checklist: migrations, smoke tests..."),
)
# Thumbs on the assistant's replies, by the chat line's text: up, or down with the user's reason.
THUMBS = {
    "What's the difference between a rebase and a merge?": ("down", "Far too long, I wanted one sentence."),
    "How do I reverse a list in Python?": ("up", ""),
    "Give me three names for a feature flag that hides the beta banner": ("up", ""),
    "Write a status update for the data migration": ("down", "Too long, I only needed the summary line."),
    "Write a status update for the search beta": ("down", "Too long, I only needed the summary line."),
    "How do I undo the last commit but keep the changes?": ("up", ""),
    "Can you summarize this week's sales report for leadership?": ("up", ""),
    "What does the on-call engineer hand over on Monday?": ("down", "The handover time is wrong, it is 10:00 CET."),
    "Explain the CAP theorem in two sentences": ("up", ""),
    "Suggest a name for the new staging cluster": ("up", ""),
    "What is a good default timeout for an HTTP client?": ("up", ""),
    "Write a two-line summary of yesterday's incident review": (
        "down",
        "It invented a meeting that never happened.",
    ),
    "What should I check before a deploy?": ("up", ""),
}

# --- Retrieval: the organisation's handbook (no project: everybody reads it) ----------------------------
HANDBOOK = {
    "vpn-setup": (
        "Setting up the office VPN",
        "Install the WireGuard client, sign in to the IT portal, download your personal profile and import "
        "it. The VPN connects automatically when you open your laptop outside the office network.",
    ),
    "vpn-dropouts": (
        "When the VPN keeps disconnecting",
        "Dropouts every few minutes on home Wi-Fi are almost always the MTU: set it to 1380 in the WireGuard "
        "profile, turn off the router's SIP helper, and reconnect. If it still drops, send the client log to "
        "the service desk.",
    ),
    "password-reset": (
        "Resetting your password",
        "Use the self-service page with your hardware key. Passwords expire every twelve months; the page "
        "warns you two weeks ahead.",
    ),
    "laptop-setup": (
        "Your first day",
        "Unpacking the laptop, enrolling it in device management, installing the VPN client and the password "
        "manager, and joining the team chat.",
    ),
    "secrets-rotation": (
        "Rotating database credentials",
        "Credentials for production databases are rotated every 90 days through the secrets manager: create "
        "the new credential, deploy the services that read it, then revoke the old one. Never paste "
        "credentials into chat.",
    ),
    "database-access": (
        "Getting access to a database",
        "Ask for read access in the access portal; your team lead approves it. Production write access needs a "
        "second approver and expires after a day.",
    ),
    "deploy-checklist-2023": (
        "Deploy checklist (2023)",
        "Announce the deploy in the release channel, run the migration script by hand on the primary, restart "
        "the workers one by one, then watch the error dashboard for ten minutes.",
    ),
    "deploy-checklist": (
        "Deploy checklist",
        "Merge to main; the pipeline runs the migrations, deploys to staging, runs the smoke tests and waits "
        "for one approval before production. Watch the error dashboard for ten minutes after the rollout.",
    ),
    "oncall-handbook": (
        "Being on call",
        "The on-call engineer answers pages within fifteen minutes, opens an incident for anything customers "
        "notice, and hands over at the Monday stand-up.",
    ),
    "incident-review": (
        "Writing an incident review",
        "Within five working days: a timeline, what went well, what went wrong, and the follow-up actions "
        "with owners. Reviews are blameless.",
    ),
}
# Everyday searches: the passage that answers is ranked first, and is used.
EVERYDAY_SEARCHES = (
    ("vpn keeps disconnecting", "vpn-dropouts"),
    ("password expired", "password-reset"),
    ("who approves production access", "database-access"),
    ("rotate production database credentials", "secrets-rotation"),
    ("on call handover", "oncall-handbook"),
    ("incident review template", "incident-review"),
    ("vpn slow on home wifi", "vpn-dropouts"),
)
# The last days: the outdated checklist outranks the current one for these; people skip it and use
# the second result (position-biased clicks the retrieval scan corrects for), or mark it stale.
DEPLOY_SEARCHES = (
    "what to check after a deploy",
    "what should I check after a deploy",
    "what to check after a deploy?",
    "checks after a deploy",
    "what to check after a deploy",
)
DEPLOY_OUTDATED, DEPLOY_CURRENT = "deploy-checklist-2023", "deploy-checklist"

# --- Project intelligence: meeting notes and chat of the demo project, and mail about its client -------
PROJECT_DOCUMENTS = (
    (
        "notes-week-1",
        "email",
        "Planning meeting, week 1",
        "We decided to ship the beta to Northwind on 14 March. Dana agreed to own the rollout plan. The risk is "
        "that the data migration takes longer than a weekend.",
    ),
    (
        "notes-week-2",
        "email",
        "Planning meeting, week 2",
        "We agreed to drop the legacy export. Priya decided to move the demo to Thursday. Open question: who "
        "signs off the security review?",
    ),
    (
        "chat-badges",
        "chat",
        "Team chat",
        "Risk: the vendor may not deliver the new badges in time. Sam will follow up.",
    ),
    ("chat-disk", "chat", "Team chat", "There is a risk the staging database runs out of disk before the release."),
)
CLIENT = "Northwind"
NICKNAME = "the blue room"
INBOX = (
    ("inbox-meeting", "Room booking", "Northwind asked to meet in the blue room on Friday afternoon."),
    ("inbox-walkthrough", "Friday", "Can we move the Northwind walkthrough to the blue room? The projector is broken."),
    ("inbox-catering", "Catering", "Coffee for twelve in the blue room, Northwind visit at two."),
    ("inbox-beta", "Beta feedback", "Northwind sent their notes on the beta: they like the new search."),
)

# --- Tools: alice's email drafts (taste), and failing runs -------------------------------------------------
DRAFT_OUTPUT = (
    "Hi team, I hope this message finds you well and that your week is going smoothly. I wanted to take a "
    "moment to share a quick update on the beta rollout, which has been progressing steadily over the past "
    "few days. We have onboarded the first group of users, collected their early feedback, and started on "
    "the fixes they asked for, most of which are small. The next group joins on Monday, and we expect the "
    "full rollout to finish by the end of the month if nothing unexpected comes up along the way. Please "
    "reach out if you have any questions or concerns about the timeline."
)
DRAFT_EDITED = (
    "Beta update: first users onboarded, their fixes under way.",
    "Beta: first group in, small fixes started, next group Monday.",
    "Quick beta update: next group joins Monday.",
    "Beta rollout on track; full rollout by month end.",
)
REPLY_OUTPUT = (
    "Thanks for the update, that works for me. I'll review the draft on Thursday.\nLet me know if you have questions."
)
REPLY_EDITED = "Thanks for the update, that works for me. I'll review the draft on Thursday."
CALENDAR_ERROR = "Could not schedule the meeting: no time zone given for '3pm'."
BILLING_ERROR = "Export failed: invoice 4411 has no customer VAT number."

# --- Generated tasks ----------------------------------------------------------------------------------
RELEASE_NOTES_TASK = {
    "title": "Write the release notes for 2.4",
    "description": "Collect the merged changes since 2.3, group them by feature, and publish the notes to the wiki.",
}
OFFSITE_TASK = {
    "title": "Book the team offsite venue",
    "description": "Find a venue for twelve people near the office for the first Friday of next month.",
}
TRIAGE_TASK = {
    "title": "Triage new bug reports",
    "description": "Label each new bug report by component and severity, and ask the reporter for steps if missing.",
}
DEMO_AGENDA_TASK = {
    "title": "Prepare the sprint demo agenda",
    "description": "List what each team shows at Thursday's sprint demo, with a speaker and five minutes each.",
}
VAGUE_TASK = {"title": "Look into the performance thing", "description": "Check performance."}

# --- Automatic checks of the assistant's answers (deterministic evals) ----------------------------------
DATE_CHECK = ("date_format", "Dates are written as YYYY-MM-DD.", "Due 3/14")
CURRENCY_CHECK = (
    "currency_code",
    "Amounts carry an ISO currency code, for example EUR 1,200.",
    "The budget is 1,200.",
)
