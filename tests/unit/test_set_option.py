"""`--set PATH=VALUE` on every command that runs a model, and `simulate --clients N
--think SECONDS` (issue 40 item 3): values read by the model file's YAML rules, applied
through LoadedModel.with_changes, every error naming the path."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from tierlab.cli import cli

from conftest import EXAMPLES

MODEL = str(EXAMPLES / "tpcw_2tier.yaml")


def commands(group: click.Group, path: tuple[str, ...] = ()) -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            found |= commands(command, (*path, name))
        else:
            found[" ".join((*path, name))] = command
    return found


def test_every_command_that_runs_a_model_takes_set():
    running = {name: c for name, c in commands(cli).items() if any(p.name == "duration" for p in c.params)}
    assert {"simulate", "ramp", "load", "live run", "size profile", "size validate", "twin verify"} <= set(running)
    lacking = [name for name, c in running.items() if not any("--set" in p.opts for p in c.params)]
    assert not lacking, f"commands that run a model without --set: {lacking}"


def run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_simulate_with_set_clients_and_think(tmp_path):
    r = run("simulate", MODEL, "--out", str(tmp_path), "--duration", "20", "--warmup", "2", "--quiet",
            "--set", "tiers.app.pools.threads.size=3", "--set", "tiers.app.pools.db.caching=transaction", "--set", "workload.session_end={after_requests: 1000}",
            "--clients", "4", "--think", "0.5")  # fmt: skip
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "summary.json").read_text())
    pools = s["tiers"]["app"]["servers"][0]["pools"]
    assert pools["threads"]["size"] == 3 and pools["threads"]["busy_max"] <= 3
    assert s["little"]["mean_in_system"] <= 4  # a closed population of 4 clients
    assert s["sessions"]["started"] <= 4


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("tiers.app.pools.thread.size=3", "tiers.app.pools.thread.size: the model has no 'tiers.app.pools.thread' to change"),
        ("tiers.app.pools.threads.size=abc", "tiers.app.pools.threads.size: "),
        ("tiers.app.pools.threads.size", "give PATH=VALUE"),
        ("tiers.app.pools.threads.size={", "tiers.app.pools.threads.size: '{' is not a YAML value"),
    ],
)
def test_set_errors_name_the_path(tmp_path, setting, message):
    r = CliRunner().invoke(cli, ["simulate", MODEL, "--out", str(tmp_path), "--quiet", "--set", setting])
    assert r.exit_code != 0
    assert message in r.output + str(r.exception or "")


def test_set_twice_is_refused(tmp_path):
    r = CliRunner().invoke(cli, ["simulate", MODEL, "--out", str(tmp_path), "--set", "run.duration=5", "--set", "run.duration=6"])
    assert r.exit_code == 2 and "run.duration is set twice" in r.output


def test_set_on_a_sizing_command(tmp_path):
    """A command that takes the model through with_run_length reads --set too (the path is
    checked before any run)."""
    r = CliRunner().invoke(cli, ["size", "validate", MODEL, "--config", "2,2", "--start", "1", "--set", "tiers.nope.size=1"])
    assert r.exit_code != 0 and "tiers.nope" in r.output + str(r.exception or "")
