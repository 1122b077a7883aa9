"""The canonical axes a preference may lie on, with a few phrasings of each end.

An axis is used only to find contradictions ("length:short" vs "length:long"): what is stored
is always the user's own words. These phrasings are extra training examples for the axis
classifier (beside the labelled preferences that carry an ``axis``), never what gets stored.
"""

from __future__ import annotations

AXIS_EXEMPLARS: dict[str, tuple[str, ...]] = {
    "length:short": (
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
    "length:long": (
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
    "format:bullets": (
        "Use bullet points.",
        "I prefer answers as bulleted lists.",
        "Please format your responses with bullets.",
        "Bullet points make it easier for me to read, use them.",
        "Can you always break things into bullet points?",
        "Lists instead of paragraphs please.",
        "Put the key points in a bulleted list each time.",
    ),
    "format:prose": (
        "Please stop using bullet points, write in paragraphs.",
        "I prefer prose over lists.",
        "No bulleted lists please, just normal sentences.",
        "Write your answers as flowing text rather than bullets.",
        "I find lists choppy; use full paragraphs.",
    ),
    "format:table": (
        "Use tables when comparing things.",
        "I like information laid out in a table.",
        "Please present comparisons as tables.",
        "Whenever there are options, put them in a table for me.",
        "Tables are easier for me to scan, use them.",
    ),
    "tone:casual": (
        "Talk to me casually.",
        "Be more casual and relaxed in how you write.",
        "I prefer a conversational tone, like chatting with a friend.",
        "Drop the formal language, just talk normally.",
        "You can be informal with me.",
        "Chill tone please, no corporate speak.",
    ),
    "tone:formal": (
        "Please use a formal tone.",
        "Keep your language professional.",
        "I prefer a polished, businesslike writing style.",
        "Avoid slang and keep things formal.",
        "Write in a professional register, this is for work.",
    ),
    "expertise:expert": (
        "I'm a senior engineer, skip the basics.",
        "You can assume I know the fundamentals.",
        "Talk to me like an expert, use technical terms.",
        "No need to explain basic concepts to me.",
        "I have a PhD in this field, go deep and technical.",
        "Treat me as an experienced developer.",
        "Don't dumb it down, I know this stuff well.",
    ),
    "expertise:basic": (
        "I'm new to this, explain it simply.",
        "Please avoid jargon, I'm a beginner.",
        "Explain things like I'm five.",
        "Assume I have no background in this.",
        "Use plain language, I'm not technical.",
        "Keep explanations beginner-friendly.",
    ),
    "followups:ask": (
        "Ask me clarifying questions if something is unclear.",
        "Don't assume, check with me first.",
        "If my request is ambiguous, ask before answering.",
        "I'd rather you ask questions than guess what I mean.",
    ),
    "followups:none": (
        "Don't ask me follow-up questions, just answer.",
        "Stop asking if I want more, just give it to me.",
        "Make reasonable assumptions instead of asking me questions.",
        "Don't end every answer with a question.",
    ),
}

OPPOSITE: dict[str, str] = {
    "length:short": "length:long",
    "length:long": "length:short",
    "tone:formal": "tone:casual",
    "tone:casual": "tone:formal",
    "expertise:basic": "expertise:expert",
    "expertise:expert": "expertise:basic",
    "format:bullets": "format:prose",
    "format:prose": "format:bullets",
    "followups:ask": "followups:none",
    "followups:none": "followups:ask",
}
AXES: tuple[str, ...] = tuple(AXIS_EXEMPLARS)


def opposite_of(axis: str | None) -> str | None:
    """The axis end a preference on ``axis`` contradicts (None: it lies on no axis)."""
    return OPPOSITE.get(axis or "")
