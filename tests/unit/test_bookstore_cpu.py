"""The bookstore's per-page CPU (serve.py --cpu): Totok & Karamcheti's snippets, spent on
the handling thread's CPU before the page's first database access."""

from __future__ import annotations

import time

import pytest

from tierlab.live.server.bookstore.app import PAPER_CPU, Bookstore, parse_cpu, spin


def test_parse_cpu_reads_pages_and_the_papers_snippets():
    assert parse_cpu("home=100, execute_search=50") == {"home": 100.0, "execute_search": 50.0}
    assert parse_cpu("") == {}
    assert parse_cpu("paper") == PAPER_CPU
    # §5.1: Home, Buy Request, Buy Confirm 100 cycles; Search 50; Add To Cart 25; Item 10; Register 1.
    assert PAPER_CPU["home"] == PAPER_CPU["buy_request"] == PAPER_CPU["buy_confirm"] == 100.0
    assert (PAPER_CPU["execute_search"], PAPER_CPU["shopping_cart"], PAPER_CPU["product_detail"]) == (50.0, 25.0, 10.0)
    with pytest.raises(ValueError, match="'home' is not PAGE=MILLISECONDS"):
        parse_cpu("home")
    with pytest.raises(ValueError, match="finite number ≥ 0"):
        parse_cpu("home=-1")
    with pytest.raises(ValueError, match="finite number ≥ 0"):
        parse_cpu("home=inf")


def test_an_unknown_page_is_refused_naming_the_pages():
    with pytest.raises(ValueError, match="no page hme; pages: home, "):
        Bookstore(None, None, cpu={"hme": 1.0})  # type: ignore[arg-type]


def _thread_cpu_of(app: Bookstore, path: str) -> float:
    start = time.thread_time()
    app({"PATH_INFO": path, "QUERY_STRING": ""}, lambda status, headers: None)
    return time.thread_time() - start


def test_a_page_spends_its_cpu_and_the_others_none():
    # search_request reads no database, so the page is the spin and a little HTML.
    app = Bookstore(None, None, cpu={"search_request": 30.0})  # type: ignore[arg-type]
    assert _thread_cpu_of(app, "/search_request") >= 0.030
    before = time.thread_time()
    spin(0.0)
    assert time.thread_time() - before < 0.030
    plain = Bookstore(None, None)  # type: ignore[arg-type]
    assert _thread_cpu_of(plain, "/search_request") < 0.030
