"""Pages of the console's lists: Django's Paginator, and the links of a page that keep the list's
other parameters (its tab, filters and page size). Rendered by templates/_pages.html."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.utils.functional import cached_property

# The page sizes a console list offers (the first is the default).
PAGE_SIZES: tuple[int, ...] = (20, 50, 100)


def querystring(params: Mapping[str, object]) -> str:
    """``?a=1&b=2`` of the parameters that have a value (empty ones are left out)."""
    return "?" + urlencode({key: value for key, value in params.items() if value not in ("", None)})


class CountedPaginator(Paginator):
    """A paginator told its count (a list whose tabs' counts were already aggregated): no COUNT query."""

    def __init__(self, object_list: Any, per_page: int, *, count: int) -> None:
        super().__init__(object_list, per_page)
        self.known_count = count

    @cached_property
    def count(self) -> int:
        return self.known_count


def page_size(raw: str | None, sizes: Sequence[int] = PAGE_SIZES) -> tuple[int, str]:
    """The page size asked for, or the default with a message saying why the one asked was ignored."""
    if not raw:
        return sizes[0], ""
    if raw in {str(size) for size in sizes}:
        return int(raw), ""
    return sizes[0], f"Ignored the page size {raw[:20]!r}: choose {', '.join(map(str, sizes))}."


@dataclass(frozen=True)
class PageLinks:
    """One page of a list and its links, each keeping the list's parameters."""

    page: Page
    numbers: list[tuple[int | str, str]]  # (page number, its link); the gaps are (ellipsis, "")
    previous_url: str
    next_url: str


def page_links(paginator: Paginator, number: str | int | None, *, params: Mapping[str, object]) -> PageLinks:
    """The page ``number`` asks for (the last one past the end, the first one for anything that is
    not a number, as Paginator.get_page does) with its links."""
    page = paginator.get_page(number)

    def link(n: int) -> str:
        return querystring({**params, "page": n})

    numbers: list[tuple[int | str, str]] = [
        (n, "" if n == Paginator.ELLIPSIS else link(int(n)))
        for n in paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)
    ]
    return PageLinks(
        page=page,
        numbers=numbers,
        previous_url=link(page.previous_page_number()) if page.has_previous() else "",
        next_url=link(page.next_page_number()) if page.has_next() else "",
    )
