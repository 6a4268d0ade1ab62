"""The proxies' per-backend limit as `tierlab live up --model … --proxy-limit` gives it
(`tierlab.live.proxy.Limit`): parsed once, a bad one named, and written as the proxy's
configuration reads it (crates/proxy/README.md `limit`)."""

from __future__ import annotations

import pytest

from tierlab.errors import InputError
from tierlab.live.proxy import GRADIENT2, Limit


def test_a_fixed_limit_and_a_gradient_one_are_parsed_once():
    assert Limit.parse("16") == Limit(16)
    assert Limit.parse(" 16:2..64 ") == Limit(16, bounds=(2, 64))
    assert Limit(16).config() == {"size": 16, "retry_after": 1}
    assert Limit(16, bounds=(2, 64), retry_after=3, interval=0.5).config() == {
        "size": 16,
        "retry_after": 3,
        "control": {"interval": 0.5, "bounds": {"threads": [2, 64]}, "strategy": GRADIENT2},
    }


@pytest.mark.parametrize(("text", "says"), [("many", "SIZE or SIZE:LEAST..GREATEST"), ("0", "SIZE ≥ 1"), ("8:9..4", "LEAST ≤ GREATEST"), ("8:2-4", "e.g. 16")])
def test_a_bad_limit_is_named(text: str, says: str):
    with pytest.raises(InputError, match="--proxy-limit") as e:
        Limit.parse(text)
    assert says in str(e.value)
