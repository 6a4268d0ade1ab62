"""A few hundred fuzzed models (tests/fuzz_models.py): each gets a clean error or a run
that finishes — no traceback, no signal, no hang. The 10,000-model campaign is
`python tests/fuzz_models.py --n 10000`."""

from __future__ import annotations

from fuzz_models import BAD, campaign


def test_fuzzed_models_get_a_clean_error_or_a_run(tmp_path):
    counts = campaign(250, seed_=3, keep=tmp_path)
    assert sum(counts.values()) == 250
    assert not any(counts[k] for k in BAD), (dict(counts), sorted(p.read_text()[:500] for p in tmp_path.iterdir()))
    # The campaign reaches both ends: models refused and models run.
    assert counts["clean error"] > 0 and counts["finite run"] > 0, dict(counts)
