"""The response-style preferences the local analyzer knows, with the phrasings it learns them from.

Each entry is one canonical preference: differently worded requests for the same thing
("be concise", "keep it short") land on the same slug, so they reinforce one row instead
of making two. ``opposite`` names the preference a newer one contradicts. The phrasings
are training data for a classifier over sentence embeddings, not patterns to match.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CatalogEntry:
    slug: str
    category: str
    description: str
    opposite: str | None
    phrasings: tuple[str, ...]


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry(
        "concise",
        "length",
        "Keep responses short and to the point",
        "detailed",
        (
            "Please keep your answers short.",
            "Be concise.",
            "I prefer brief responses.",
            "Keep it short please, I don't need long explanations.",
            "Can you give me shorter answers from now on?",
            "Your replies are way too long, trim them down.",
            "Just the essentials, no long paragraphs.",
            "I like answers that are quick and to the point.",
            "tl;dr style answers work best for me",
            "Less text please. Short and sweet.",
            "Stop writing essays, a couple of sentences is enough.",
            "Keep responses under a few lines.",
            "Keep your answers brief.",
            "Short replies, please.",
        ),
    ),
    CatalogEntry(
        "detailed",
        "length",
        "Give thorough, detailed explanations",
        "concise",
        (
            "Give me detailed explanations.",
            "I prefer thorough, in-depth answers.",
            "Please go into more depth when you answer.",
            "Don't hold back on detail, I like long comprehensive responses.",
            "Your answers are too shallow, elaborate more.",
            "I want the full picture, explain everything in detail.",
            "Longer, more complete answers please.",
            "Always walk me through the reasoning in depth.",
            "More detail in your responses, please.",
        ),
    ),
    CatalogEntry(
        "bullet_points",
        "format",
        "Format answers as bullet points",
        "prose",
        (
            "Use bullet points.",
            "I prefer answers as bulleted lists.",
            "Please format your responses with bullets.",
            "Bullet points make it easier for me to read, use them.",
            "Can you always break things into bullet points?",
            "Lists instead of paragraphs please.",
            "Put the key points in a bulleted list each time.",
        ),
    ),
    CatalogEntry(
        "prose",
        "format",
        "Write in flowing paragraphs, not lists",
        "bullet_points",
        (
            "Please stop using bullet points, write in paragraphs.",
            "I prefer prose over lists.",
            "No bulleted lists please, just normal sentences.",
            "Write your answers as flowing text rather than bullets.",
            "I find lists choppy; use full paragraphs.",
        ),
    ),
    CatalogEntry(
        "tables",
        "format",
        "Present comparisons in tables",
        None,
        (
            "Use tables when comparing things.",
            "I like information laid out in a table.",
            "Please present comparisons as tables.",
            "Whenever there are options, put them in a table for me.",
            "Tables are easier for me to scan, use them.",
        ),
    ),
    CatalogEntry(
        "numbered_steps",
        "format",
        "Give instructions as numbered steps",
        None,
        (
            "Give me step-by-step numbered instructions.",
            "I prefer numbered steps for how-to answers.",
            "Please number the steps when you explain a process.",
            "Break instructions into numbered steps every time.",
            "Walk me through things as a numbered list of steps.",
        ),
    ),
    CatalogEntry(
        "headings",
        "format",
        "Structure longer answers with headings",
        None,
        (
            "Use headings to organize longer answers.",
            "I like responses with clear section headers.",
            "Please structure your answers with markdown headings.",
        ),
    ),
    CatalogEntry(
        "casual",
        "tone",
        "Use a casual, conversational tone",
        "formal",
        (
            "Talk to me casually.",
            "Be more casual and relaxed in how you write.",
            "I prefer a conversational tone, like chatting with a friend.",
            "Drop the formal language, just talk normally.",
            "You can be informal with me.",
            "Chill tone please, no corporate speak.",
        ),
    ),
    CatalogEntry(
        "formal",
        "tone",
        "Use a formal, professional tone",
        "casual",
        (
            "Please use a formal tone.",
            "Keep your language professional.",
            "I prefer a polished, businesslike writing style.",
            "Avoid slang and keep things formal.",
            "Write in a professional register, this is for work.",
        ),
    ),
    CatalogEntry(
        "direct",
        "tone",
        "Be direct: no filler or pleasantries",
        None,
        (
            "Be direct with me.",
            "Skip the pleasantries and get to the point.",
            "No fluff, no filler, just answer.",
            "Don't sugarcoat things, be blunt.",
            "Stop with the 'great question' stuff, just answer directly.",
            "Cut the intro and the small talk.",
        ),
    ),
    CatalogEntry(
        "friendly",
        "tone",
        "Be warm and encouraging",
        None,
        (
            "Be encouraging, I'm learning.",
            "I like a warm and friendly tone.",
            "Please be supportive and positive when you reply.",
            "A friendly, upbeat tone works best for me.",
        ),
    ),
    CatalogEntry(
        "no_emoji",
        "tone",
        "Do not use emoji",
        None,
        (
            "Please don't use emojis.",
            "No emoji in your answers.",
            "Stop adding emojis to your messages.",
            "I dislike emoticons, leave them out.",
        ),
    ),
    CatalogEntry(
        "expert",
        "expertise",
        "Answer at an expert level; skip the basics",
        "beginner",
        (
            "I'm a senior engineer, skip the basics.",
            "You can assume I know the fundamentals.",
            "Talk to me like an expert, use technical terms.",
            "No need to explain basic concepts to me.",
            "I have a PhD in this field, go deep and technical.",
            "Treat me as an experienced developer.",
            "Don't dumb it down, I know this stuff well.",
        ),
    ),
    CatalogEntry(
        "beginner",
        "expertise",
        "Explain simply, as to a beginner; avoid jargon",
        "expert",
        (
            "I'm new to this, explain it simply.",
            "Please avoid jargon, I'm a beginner.",
            "Explain things like I'm five.",
            "Assume I have no background in this.",
            "Use plain language, I'm not technical.",
            "Keep explanations beginner-friendly.",
        ),
    ),
    CatalogEntry(
        "code_examples",
        "output",
        "Include code examples",
        None,
        (
            "Always include code examples.",
            "Show me code snippets when you explain something.",
            "I learn best from examples in code, add them.",
            "Please include a working code sample in your answers.",
            "Give me code, not just descriptions.",
        ),
    ),
    CatalogEntry(
        "cite_sources",
        "output",
        "Cite sources and links",
        None,
        (
            "Please cite your sources.",
            "Include links to references when you can.",
            "I want to know where the information comes from, add citations.",
            "Always back up claims with sources.",
        ),
    ),
    CatalogEntry(
        "summary_first",
        "output",
        "Start with a short summary",
        None,
        (
            "Start with a one-line summary before the details.",
            "Give me the TL;DR first, then the explanation.",
            "Lead with the conclusion.",
            "Put the answer first and the explanation after.",
            "Bottom line up front please.",
        ),
    ),
    CatalogEntry(
        "examples",
        "output",
        "Include concrete examples",
        None,
        (
            "Include concrete examples in your explanations.",
            "I understand better with real-world examples, use them.",
            "Please illustrate your points with examples.",
        ),
    ),
    CatalogEntry(
        "ask_clarifying",
        "behavior",
        "Ask clarifying questions before assuming",
        "no_clarifying",
        (
            "Ask me clarifying questions if something is unclear.",
            "Don't assume, check with me first.",
            "If my request is ambiguous, ask before answering.",
            "I'd rather you ask questions than guess what I mean.",
        ),
    ),
    CatalogEntry(
        "no_clarifying",
        "behavior",
        "Answer directly without asking follow-up questions",
        "ask_clarifying",
        (
            "Don't ask me follow-up questions, just answer.",
            "Stop asking if I want more, just give it to me.",
            "Make reasonable assumptions instead of asking me questions.",
            "Don't end every answer with a question.",
        ),
    ),
    CatalogEntry(
        "no_apologies",
        "behavior",
        "Do not apologise",
        None,
        (
            "Stop apologizing all the time.",
            "You don't need to say sorry, just fix it.",
            "No apologies please, they waste my time.",
        ),
    ),
    CatalogEntry(
        "no_disclaimers",
        "behavior",
        "Skip disclaimers and caveats",
        None,
        (
            "Skip the disclaimers.",
            "I don't need warnings and caveats in every answer.",
            "Leave out the 'consult a professional' notes.",
            "No hedging, no disclaimers.",
        ),
    ),
    CatalogEntry(
        "admit_uncertainty",
        "behavior",
        "Say so when unsure instead of guessing",
        None,
        (
            "Tell me when you're not sure instead of making things up.",
            "If you don't know, say you don't know.",
            "Flag anything you are uncertain about.",
        ),
    ),
    CatalogEntry(
        "proactive_suggestions",
        "behavior",
        "Offer proactive suggestions and next steps",
        None,
        (
            "Suggest next steps at the end of your answers.",
            "I like it when you point out things I might have missed.",
            "Be proactive and recommend improvements.",
        ),
    ),
)

BY_SLUG: dict[str, CatalogEntry] = {entry.slug: entry for entry in CATALOG}


def opposite_of(slug: str) -> str | None:
    entry = BY_SLUG.get(slug)
    return entry.opposite if entry else None
