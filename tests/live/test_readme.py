"""The README and docs/ are documentation that runs: every YAML block loads and runs,
every shell command and Python snippet runs as written — in a scratch folder holding
`examples/`, in the document's order. Only what makes them long is cut: a command that
runs a model gets `--duration`/`--warmup` (SHORT, or LIVE_SHORT on the live testbed),
the live sizing commands a smaller grid and one run per rate (LIVE_SMALLER: each of
their runs is seconds of wall time), and the testbed takes free ports instead of
8080/8081."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest

import tierlab
from tierlab.cli import cli
from tierlab.model import load_yaml

from conftest import EXAMPLES, ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
SHORT = ("60", "10")  # --duration, --warmup of a simulated run
LIVE_SHORT = ("6", "2")  # … of a run on the live testbed
LIVE_SMALLER = {("live", "profile"): {"--threads": "4,8", "--connections": "2,4"}, ("live", "validate"): {"--runs": "1"}}
# Commands that are not tierlab's: why each is not run here.
NOT_RUN = {
    "pip": "installing is CI's first step (.ci/run), before this test can run",
    "python3 -m pytest": "the test suite itself (.ci/run runs it)",
    "cargo test": "the Rust tests (.ci/run runs them)",
    "cargo install cargo-mutants": "a developer's tool, installed once by hand (docs/mutation-testing.md)",
    "export CARGO_PROFILE_TEST_DEBUG": "the environment of the mutation runs below",
    "cargo mutants": "mutation testing takes over an hour on two cores; run by hand (docs/mutation-testing.md)",
    "git diff": "the lines changed since a mutation run, for `cargo mutants --in-diff` (docs/mutation-testing.md)",
}


def blocks(lang: str) -> list[tuple[str, str]]:
    """(`file:line`, body) of every `lang` block of the docs."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                found.append((f"{doc.name}:{text[: m.start()].count(chr(10)) + 1}", m.group(2)))
    return found


BLOCKS = [load_yaml(b) for _, b in blocks("yaml")]  # 8.0e6 is a number, as in a model file


def test_readme_model_runs():
    full = [b for b in BLOCKS if "requests" in b]
    assert full
    for b in full:
        # Shortened, but past its last workload phase (a phase at or past the run's end is refused).
        last = max((ph["at"] for ph in b["workload"].get("phases", [])), default=0)
        t = tierlab.simulate(tierlab.load_model(b).with_run(duration=max(120, last + 60), warmup=10))
        assert t.summary["requests"]["ok"] > 0


def test_readme_cluster_fragment_runs():
    fragment = next(b for b in BLOCKS if "requests" not in b)
    tiers = fragment["tiers"]
    model = {
        "run": {"duration": 60, "warmup": 5},
        "tiers": tiers,
        "requests": {"A": {"web": [{"call": "app"}], "app": [{"delay": 0.01}]}},
        "workload": {"population": {"clients": 20}, "think": 0.1, "session_end": {"after_requests": 5}, "chain": {"matrix": {"A": {"A": 1}}, "start": "A"}},
    }
    t = tierlab.simulate(model)
    assert t.summary["tiers"]["app"]["dispatch"]["sessions_created"] > 0


def commands(body: str) -> list[list[str]]:
    """The commands of a shell block: continuations joined, comments dropped, `&&`
    chains split."""
    found: list[list[str]] = []
    for line in body.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            found.append(words[:cut])
            words = words[cut + 1 :]
    return found


def _command(words: list[str]) -> click.Command:
    command: click.Command = cli
    for w in words[1:]:
        sub = command.get_command(click.Context(command), w) if isinstance(command, click.Group) else None
        if sub is None:
            break
        command = sub
    return command


def _set(words: list[str], option: str, value: str) -> list[str]:
    if option in words:
        i = words.index(option)
        return [*words[:i], option, value, *words[i + 2 :]]
    return [*words, option, value]


class LiveTarget:
    """What the live block's commands need: free ports for `live up`, and its target."""

    def __init__(self) -> None:
        socks = [socket.socket() for _ in range(2)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        self.port, self.admin = (s.getsockname()[1] for s in socks)
        for s in socks:
            s.close()

    def adapt(self, words: list[str]) -> list[str]:
        if words[1:3] == ["live", "up"]:
            words = _set(_set(words, "--port", str(self.port)), "--admin-port", str(self.admin))
        return [w.replace("127.0.0.1:8080", f"127.0.0.1:{self.port}") for w in words]


def shortened(words: list[str], bed: LiveTarget) -> list[str]:
    """`words` as this test runs them (see the module's docstring)."""
    names = {p.name for p in _command(words).params}
    live = words[1] in ("live", "load")
    if "duration" in names:
        duration, warmup = LIVE_SHORT if live else SHORT
        words = _set(_set(words, "--duration", duration), "--warmup", warmup)
    for option, value in LIVE_SMALLER.get(tuple(words[1:3]), {}).items():
        words = _set(words, option, value)
    return bed.adapt(words)


def run_block(body: str, cwd: Path, bed: LiveTarget) -> list[str]:
    """Run every command of a shell block in `cwd`; the ones not run, with the reason."""
    skipped = []
    for words in commands(body):
        reason = next((why for start, why in NOT_RUN.items() if shlex.join(words).startswith(start)), None)
        if reason:
            skipped.append(f"{shlex.join(words)}: {reason}")
            continue
        assert words[0] == "tierlab", f"a shell snippet runs {words[0]!r}: run it here or say in NOT_RUN why not"
        out = None
        if ">" in words:
            words, out = words[: words.index(">")], words[words.index(">") + 1]
        words = shortened(words, bed)
        r = subprocess.run([sys.executable, "-m", "tierlab.cli", *words[1:]], cwd=cwd, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"`{shlex.join(words)}` failed ({r.returncode}):\n{r.stderr[-3000:]}"
        if out:
            (cwd / out).write_text(r.stdout)
    return skipped


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A scratch folder with the examples and the tests' fixtures, as a checkout of the
    repository has them."""
    root = tmp_path_factory.mktemp("readme")
    (root / "examples").symlink_to(EXAMPLES)
    (root / "tests").symlink_to(ROOT / "tests")  # other load tools' results (tests/fixtures/imports)
    (root / "jvm").symlink_to(ROOT / "jvm")  # `live up --server java` builds the clone's Maven project
    return root


SHELL = blocks("sh")


@pytest.mark.parametrize("where, body", SHELL, ids=[w for w, _ in SHELL])
def test_shell_snippet_runs(workspace, where, body):
    bed = LiveTarget()
    live = any(w[1:3] == ["live", "up"] for w in commands(body))
    try:
        skipped = run_block(body, workspace, bed)
    finally:
        if live:
            subprocess.run([sys.executable, "-m", "tierlab.cli", "live", "down"], cwd=workspace, capture_output=True)
    for s in skipped:
        print(f"{where}: not run: {s}")


PYTHON = blocks("python")


@pytest.mark.parametrize("where, body", PYTHON, ids=[w for w, _ in PYTHON])
def test_python_snippet_runs(workspace, monkeypatch, where, body):
    monkeypatch.chdir(workspace)
    exec(compile(body, where, "exec"), {})
