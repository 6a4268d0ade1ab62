"""A model error raised in a sweep's worker process comes back whole: it is pickled
there and unpickled in the parent (a ModelError that did not round-trip hung the sweep:
the pool's result thread died on it)."""

from __future__ import annotations

import pickle

from tierlab.errors import ModelError


def test_a_model_error_survives_the_trip_from_a_worker():
    e = ModelError([("tiers.app.pools.db.size", "must be at least 1")], "model.yaml")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is ModelError and back.problems == e.problems and back.source == "model.yaml" and str(back) == str(e)
