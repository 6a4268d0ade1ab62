"""The contract between the model compiler and the engine, checked: what
`model/compile.py` produces for every example model is valid under the JSON Schema the
engine derives from the types it reads (`crates/sim` model.rs, `_core.model_schema`),
and the limits the compiler states are the engine's own."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path

import jsonschema
import pytest
import yaml

from tierlab import _core
from tierlab.errors import ModelError
from tierlab.model import load_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODELS = sorted(p for p in EXAMPLES.glob("*.yaml") if "tiers" in yaml.safe_load(p.read_text()))


@cache
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(_core.model_schema())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@cache
def engine_input(name: str) -> dict:
    return load_model(EXAMPLES / name).engine()


def errors(engine: dict) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(engine)]


def test_every_example_is_an_example_model():
    assert len(MODELS) >= 6, MODELS


@pytest.mark.filterwarnings("ignore::tierlab.errors.TierlabWarning")
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_the_compiled_model_is_valid_under_the_engine_schema(path: Path):
    assert errors(engine_input(path.name)) == []


@pytest.mark.filterwarnings("ignore::tierlab.errors.TierlabWarning")
def test_the_schema_refuses_what_the_engine_refuses():
    """The schema is strict as the engine's reader is: an unknown key, a missing one, a
    value of the wrong type or an unknown kind are each an error at their path."""
    good = engine_input("tpcw_2tier.yaml")

    def broken(edit) -> list[str]:
        m = copy.deepcopy(good)
        edit(m)
        return errors(m)

    assert any(e.startswith("tiers.0:") and "'spare'" in e for e in broken(lambda m: m["tiers"][0].update(spare=1)))
    assert any("'run'" in e for e in broken(lambda m: m.pop("run")))
    assert any(e.startswith("run.seed:") for e in broken(lambda m: m["run"].update(seed="7")))
    assert any(e.startswith("workload.think") for e in broken(lambda m: m["workload"]["think"].update(kind="pareto")))
    assert any(e.startswith("tiers.0.pools:") for e in broken(lambda m: m["tiers"][0].update(pools=m["tiers"][0]["pools"] * (_core.MAX_POOLS + 1))))


def test_the_pool_limit_is_the_engines():
    """The compiler refuses more pools than the engine's limit, read from the engine
    (one statement of it), with the field and the limit named."""
    model = yaml.safe_load((EXAMPLES / "tpcw_2tier.yaml").read_text())
    tier = next(iter(model["tiers"]))
    pool = next(iter(model["tiers"][tier]["pools"].values()))
    model["tiers"][tier]["pools"] = {f"p{i}": pool for i in range(_core.MAX_POOLS + 1)}
    with pytest.raises(ModelError, match=rf"tiers\.{tier}\.pools.*at most {_core.MAX_POOLS} pools per tier"):
        load_model(model, base_dir=EXAMPLES).engine()
