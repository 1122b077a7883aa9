"""Rendering a context as the text block put in the system prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING

from learning.safety import quoted

if TYPE_CHECKING:
    from learning.context.build import Context


def notice(instruction: str) -> str:
    """The line that makes every application of a taste pattern visible."""
    return f"[Intel] Applying learned preference: {quoted(instruction)}"


def workflow_block(workflow: dict) -> str:
    """A known workflow in the source design's format: what it is, its trigger, the output format,
    and the offer to help proactively. Its texts come from the user's own requests, so they are quoted."""
    name = quoted(workflow["workflow_name"], 200)
    lines = [
        f"[Known Workflow: {quoted(workflow['workflow_name'], 200)[1:-1]}]",
        "The user regularly asks for this. The current message looks like another request of this kind.",
        f"Trigger: requests like {quoted(workflow['trigger_pattern'], 300)}",
    ]
    if workflow.get("preferred_output"):
        lines.append(f"Output format: {quoted(workflow['preferred_output'], 200)}")
    lines.append(f"If this message matches, offer to do {name} the way the user usually wants it, without being asked.")
    return "\n".join(lines)


def context_render(context: Context) -> list[str]:
    """The blocks of the context's text, most essential first; joined by a blank line."""
    blocks = []
    if context.taste_patterns:
        blocks.append("\n".join(notice(p["instruction"]) for p in context.taste_patterns))
    if context.preferences:
        blocks.append(
            "[User Preferences]\n"
            + "\n".join(
                # The user's own words that read like orders to the assistant stay their stated preference.
                f"- The user's stated preference: {quoted(p['description'])}"
                if p.get("needs_review")
                else f"- {p['description']}"
                for p in context.preferences
            )
        )
    if context.workflow is not None:
        blocks.append(workflow_block(context.workflow))
    if context.agent_learnings:
        blocks.append(
            "[Lessons From Reviewed Feedback]\n"
            + "\n".join(f"- {a['prevention_prompt']}" for a in context.agent_learnings)
        )
    own = [m for m in context.memories if m["visibility"] == "private"]
    shared = [m for m in context.memories if m["visibility"] != "private"]
    if own:
        # Learned text is data about the user, quoted, never instructions to follow.
        blocks.append("[About the User]\n" + "\n".join(f"- The user said: {quoted(m['content'])}" for m in own))
    if shared:
        blocks.append("[Team Knowledge]\n" + "\n".join(f"- {m['kind']}: {quoted(m['content'])}" for m in shared))
    if context.packet_evidence:
        # From the project's documents (or a remembered fact, said so): quoted evidence, not orders.
        blocks.append(
            "[Project Intelligence]\n"
            + "\n".join(
                f"- {c['card_type']} ({'from sources' if c['origin'] == 'source' else 'from memory'}): "
                f"{quoted(c['title'], 200)}; evidence {quoted(c['excerpt'], 300)}"
                + (f" ({quoted(c['document_ref'], 100)})" if c.get("document_ref") else "")
                for c in context.packet_evidence
            )
        )
    if context.task_examples:
        blocks.append(
            "[Approved Task Examples]\n"
            + "\n".join(f"- {quoted(t['title'], 120)}: {quoted(t['description'], 300)}" for t in context.task_examples)
        )
    return blocks
