"""The command line as a user meets it: every option explained, the same run-length
options wherever a model runs, progress in a log, tables whole when piped."""

from __future__ import annotations

import click
import pytest

import tierlab
from tierlab.cli import cli


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None and command.name == name, f"`tierlab {' '.join((*path, name))}` does not load"
        if isinstance(command, click.Group):
            found |= _commands(command, (*path, name))
        else:
            found[" ".join((*path, name))] = command
    return found


COMMANDS = _commands(cli)


def test_commands_are_found():
    assert {"simulate", "live run", "size profile", "report"} <= set(COMMANDS)


def test_lazy_names_resolve():
    assert tierlab.simulate.__module__ == "tierlab.run.simulate"
    assert tierlab.Trace.__name__ == "Trace" and callable(tierlab.read_trace)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        _ = tierlab.nonexistent  # type: ignore[attr-defined]


# Every command that runs a model: simulated, or on a live server.
RUNS_A_MODEL = ["simulate", "ramp", "load", "live run", "live profile", "live validate", "size profile", "size validate", "cost simulate"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_has_help(name):
    command = COMMANDS[name]
    assert command.help, f"`tierlab {name}` has no help text"
    bare = [p.opts[0] for p in command.params if isinstance(p, click.Option) and not p.help]
    assert not bare, f"`tierlab {name}`: options without help: {', '.join(bare)}"


@pytest.mark.parametrize("name", RUNS_A_MODEL)
def test_run_length_options_mean_the_same_everywhere(name):
    options = {p.name: p for p in COMMANDS[name].params}
    duration, warmup = options["duration"], options["warmup"]
    assert "warm-up included" in duration.help and "not measured" in warmup.help
    assert isinstance(duration.type, click.FloatRange) and duration.type.min == 0 and duration.type.min_open


def test_a_single_run_reports_every_tenth_in_a_log():
    from io import StringIO

    from rich.console import Console

    from tierlab.run.progress import LineProgress, progress

    log = StringIO()
    console = Console(file=log, width=200)
    bar = progress("{task.description}", console=console)
    assert isinstance(bar, LineProgress)  # not a terminal
    with bar:
        task = bar.add_task("[bold]simulating[/] m", total=1.0, counts="")
        for k in range(1, 41):
            bar.update(task, completed=k / 40, counts=f"{k} done")
    lines = log.getvalue().splitlines()
    assert [line.split(": ")[1].split(",")[0] for line in lines] == [f"({p}%)" for p in range(10, 101, 10)]
    assert lines[-1].startswith("simulating m: (100%)") and lines[-1].endswith("40 done")


def test_json_for_machines_has_null_for_what_was_not_measured(capsys):
    import json

    import numpy as np

    from tierlab.cli.common import write_json

    write_json(None, {"retransmitted": float("nan"), "steps": [{"p90": np.float32("nan"), "ok": np.int64(3), "mean": np.float64(0.5)}]})
    assert json.loads(capsys.readouterr().out) == {"retransmitted": None, "steps": [{"p90": None, "ok": 3, "mean": 0.5}]}
