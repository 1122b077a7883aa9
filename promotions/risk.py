"""The risk of a learning, for the automatic promotion paths: they apply only what is low risk.

The rule, in one sentence: a learning is **high** risk when its text, its tags or its tool name
touch money, the law, a contract, or what a client sees; otherwise it is **low**. Matching is by
word stem on the normalised text (so "invoices", "invoicing" and "Invoice" all match "invoic"),
and the categories and the stems that matched are returned, so a reviewer sees why. A false "high"
costs a person's review; a false "low" could change what clients are told without one, so the
stems lean wide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from promotions.models import RiskLevel

# Category -> word stems (a word matches when it starts with one). Currency signs match anywhere.
HIGH_RISK_STEMS: dict[str, tuple[str, ...]] = {
    "financial": tuple(
        "budget cost invoic payment pay paid price pricing fee money euro dollar financ accounting tax payroll "
        "salar expense revenue billing bill refund discount quote quotation bank credit debit profit margin "
        "fund".split()
    ),
    "legal": tuple(
        "legal law lawsuit liabil liable complian regulat gdpr court attorney lawyer litigat indemn permit licens "
        "dispute claim sue".split()
    ),
    "contractual": tuple(
        "contract agreement clause sla warrant obligation nda signed signature tender bid procure penalt "
        "subcontract terms".split()
    ),
    "client_facing": tuple(
        "client customer owner-facing external public press publish newsletter announce stakeholder tenant "
        "buyer".split()
    ),
}
CURRENCY = re.compile(r"[$€£¥]")
WORD = re.compile(r"[\w-]+")


@dataclass(frozen=True)
class Risk:
    level: str
    reasons: list[str] = field(default_factory=list)  # "financial: invoic", ...

    def as_dict(self) -> dict[str, object]:
        return {"level": self.level, "reasons": self.reasons}


def risk_classify(*, texts: Iterable[str], tags: Iterable[str] = (), tool_name: str = "") -> Risk:
    """High when any text, tag or the tool name touches a financial, legal, contractual or
    client-facing matter (see the module's docstring); low otherwise."""
    joined = " ".join([*map(str, texts), *map(str, tags), str(tool_name)]).lower()
    words = set(WORD.findall(joined.replace("_", " ")))
    reasons: list[str] = []
    for category, stems in HIGH_RISK_STEMS.items():
        hit = sorted({stem for stem in stems for word in words if word.startswith(stem)})
        if hit:
            reasons.append(f"{category}: {', '.join(hit[:5])}")
    if CURRENCY.search(joined) and not any(r.startswith("financial") for r in reasons):
        reasons.append("financial: currency sign")
    return Risk(level=RiskLevel.HIGH if reasons else RiskLevel.LOW, reasons=reasons)
