"""The README is executable: every ```sh (and ```python) block runs, in order, section by section.

Each `## ` section's shell blocks run in one bash (`set -e -o pipefail`), so a variable set in one
block (`S3=$(...)`) is there in the next, against the twin the section itself starts. They run in a
scratch directory that looks like a checkout (symlinks to the repository's top-level entries, no
`.twin`), so the README's default run directory `./.twin` is what the commands use, as a user's
would be. A command that fails names its README line, its block and the output. A section that
starts a twin must stop it (`twin down`) before it ends: a README that leaves a user with a running
twin is incomplete. Sections with a `--network netns` or `--network mininet` twin, or `mn --custom`,
take the machine's netns lock (only one such network at a time).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from emulator.rundir import RunDir
from tests.conftest import NETNS_LOCK

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SECTION_TIMEOUT_S = 900
LOCK_WAIT_S = 1800  # other netns work on a shared machine; in CI the tests run one at a time

# The only README commands that do not run here, each with why. Keep this list short.
SKIPPED_LINES = {
    "make test": "it runs the whole suite, which this test is part of",
    "make chaos": "a 10-minute run; tests/chaos/test_chaos.py runs the 2-minute command below it",
    ".venv/bin/twin chaos": "tests/chaos/test_chaos.py runs this seed and length, with its checks",
}

LEFT_RUNNING = "+++ the section left its twin running: twin down"

# Top-level entries of the checkout the scratch directory must not share.
NOT_LINKED = {".git", ".twin", ".pytest_cache", ".ruff_cache", "__pycache__"}


@dataclass
class Block:
    fence: int  # README line of the ```sh or ```python fence (1-based)
    lines: list[str]
    lang: str = "sh"


@dataclass
class Section:
    title: str
    line: int
    blocks: list[Block] = field(default_factory=list)


def parse(text: str) -> list[Section]:
    """The `## ` sections of the README and their ```sh and ```python blocks (before the first heading:
    a section of its own)."""
    sections = [Section("(top)", 1)]
    block: Block | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if block is not None:
            if line.strip() == "```":
                sections[-1].blocks.append(block)
                block = None
            else:
                block.lines.append(line)
        elif line.strip() in ("```sh", "```python"):
            block = Block(n, [], line.strip()[3:])
        elif line.startswith("## "):
            sections.append(Section(line[3:].strip(), n))
    assert block is None, f"README.md:{block.fence}: a ``` block is never closed"
    return [s for s in sections if s.blocks]


def script(section: Section) -> str:
    """One bash script whose line N is README line N, so $LINENO names the README line that failed.
    A python block is a here-document to the venv's python on the same lines."""
    last = section.blocks[-1].fence + len(section.blocks[-1].lines)
    out = [""] * (last + 1)
    out[0] = ("echo \"+++ start $(date +%s.%N)\" >&2; set -e -o pipefail; "
              "trap 'rc=$?; echo \"README.md:$LINENO: exited $rc\" >&2' ERR; "
              # Stopped here, while a netns section still holds the lock, not after the lock is free.
              "readme_exit() { rc=$?; echo \"+++ end at $SECONDS s\" >&2; "
              "if kill -0 \"$(cat .twin/supervisor.pid 2>/dev/null)\" 2>/dev/null; then "
              f"echo '{LEFT_RUNNING}' >&2; .venv/bin/twin down >&2 || true; fi; exit $rc; }}; trap readme_exit EXIT")
    for b in section.blocks:
        out[b.fence - 1] = f"echo \"+++ README.md:{b.fence} at $SECONDS s\" >&2"
        if b.lang == "python":
            out[b.fence - 1] += "; .venv/bin/python - <<'README_PYTHON'"
            out[b.fence + len(b.lines)] = "README_PYTHON"
            out[b.fence:b.fence + len(b.lines)] = b.lines
            continue
        for i, line in enumerate(b.lines):
            skipped = [why for cmd, why in SKIPPED_LINES.items() if line.strip().startswith(cmd + " ")
                       or line.strip() == cmd]
            out[b.fence + i] = f": skipped, {shlex.quote(skipped[0])}" if skipped else line
    return "\n".join(out) + "\n"


def scratch_checkout(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for entry in REPO.iterdir():
        if entry.name not in NOT_LINKED:
            (path / entry.name).symlink_to(entry)
    return path


def timings(output: str, started: float) -> str:
    """How long the netns lock was waited for and each block took (from the script's markers)."""
    start = re.search(r"^\+\+\+ start ([\d.]+)", output, re.M)
    marks = [(line, int(s)) for line, s in re.findall(r"^\+\+\+ (README\.md:\d+|end) at (\d+) s", output, re.M)]
    blocks = ", ".join(f"{line} {end - s} s" for (line, s), (_, end) in zip(marks, marks[1:], strict=False))
    waited = f"{float(start[1]) - started:.1f} s before the script started" if start else "the script never started"
    return f"{waited}; blocks: {blocks}"


def containers_unavailable() -> str:
    """Why the container section cannot run here ("" when it can). CI builds the image first."""
    if os.environ.get("TWIN_IMAGE_PREBUILT") == "1":
        return ""
    r = subprocess.run(["docker", "image", "inspect", "clustertwin:dev"], capture_output=True, text=True)
    if r.returncode != 0:
        return ("no Docker engine with the clustertwin:dev image here (CI builds it with docker/build.sh "
                f"and sets TWIN_IMAGE_PREBUILT=1): {(r.stderr or r.stdout).strip()[:200]}")
    return ""


SECTIONS = parse(README.read_text())


def test_readme_has_blocks() -> None:
    titles = [s.title for s in SECTIONS]
    assert "Starting and stopping a twin" in titles, titles


def test_script_lines_are_readme_lines(tmp_path: Path) -> None:
    text = ("# t\n\n```sh\necho a\nmake test\n```\n\n## S\n\n```python\nprint('p')\n```\n"
            "```sh\nfalse\n```\n")
    top, s = parse(text)
    assert script(top).splitlines()[3] == "echo a" and script(top).splitlines()[4].startswith(": skipped")
    (tmp_path / ".venv").symlink_to(REPO / ".venv")  # not in the checkout: its ./.twin may be a user's twin
    r = subprocess.run(["bash", "-c", script(s)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1 and "README.md:14: exited 1" in r.stderr and r.stdout == "p\n", r


def test_lustre_estimate_takes_both_sizes(tmp_path: Path) -> None:
    """The README's `twin lustre estimate --checkpoint 2T --read 10T`: one estimate each, in that order."""
    twin = [str(REPO / ".venv/bin/twin"), "lustre", "estimate", "--run-dir", str(tmp_path / "none")]
    r = subprocess.run([*twin, "--checkpoint", "2T", "--read", "10T"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.index("checkpoint write of 2.0 TiB") < r.stdout.index("dataset read of 10.0 TiB"), r.stdout
    bad = subprocess.run([*twin, "--checkpoint", "2T", "--read", "10X"], capture_output=True, text=True)
    assert bad.returncode == 22 and "bad --read size '10X'" in bad.stderr and not bad.stdout, bad


def test_bench_usage_names_only_real_flags() -> None:
    """Every flag the bench's usage text names is one its parser accepts."""
    import bench.__main__ as bench_main

    usage = subprocess.run([str(REPO / ".venv/bin/python"), "-m", "bench", "--help"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout
    named = set(re.findall(r"--[a-z][a-z-]*", bench_main.__doc__))
    accepted = set(re.findall(r"--[a-z][a-z-]*", usage.split("options:")[-1]))  # not the description's
    assert named and named <= accepted, (named - accepted, usage)


def slug(title: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", title.lower())[:4])


@pytest.mark.timeout(LOCK_WAIT_S + SECTION_TIMEOUT_S + 180)
@pytest.mark.parametrize("section", SECTIONS, ids=[slug(s.title) for s in SECTIONS])
def test_readme_section(section: Section, tmp_path: Path) -> None:
    if "docker" in "".join(line for b in section.blocks for line in b.lines):
        why = containers_unavailable()
        if why:
            if os.environ.get("TWIN_CONTAINERS_REQUIRED") == "1":
                pytest.fail(why, pytrace=False)
            pytest.skip(why)
    work = scratch_checkout(tmp_path / "checkout")
    (work / "readme.sh").write_text(script(section))
    cmd = ["bash", "readme.sh"]
    if re.search(r"--network (netns|mininet)|mn --custom", script(section)):
        cmd = ["flock", "-w", str(LOCK_WAIT_S), NETNS_LOCK, *cmd]
    env = {k: v for k, v in os.environ.items() if k not in ("TWIN_RUN_DIR", "SLURM_CONF")}
    run = RunDir(work / ".twin")
    started = time.time()
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output = ""
    try:
        output, _ = proc.communicate(timeout=LOCK_WAIT_S + SECTION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output = proc.communicate()[0] + f"\n(killed after {LOCK_WAIT_S + SECTION_TIMEOUT_S} s)"
    finally:
        if proc.poll() is None:  # timed out, or the test was interrupted: nothing of it keeps running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if run.running_supervisor() is not None:  # e.g. killed on timeout: the twin does not outlive the test
            subprocess.run([str(REPO / ".venv/bin/twin"), "down", "--run-dir", str(run.path)],
                           capture_output=True, timeout=120)
    print(timings(output, started))
    if proc.returncode != 0:
        failed = re.findall(r"README\.md:(\d+): exited", output)
        line = int(failed[-1]) if failed else None
        block = next((b for b in reversed(section.blocks) if line and b.fence < line), None)
        shown = "\n".join(block.lines) if block else "(no block: see the output)"
        pytest.fail(f"README section {section.title!r}: README.md:{line} failed\n--- block (README.md:"
                    f"{block.fence if block else '?'}) ---\n{shown}\n--- output (last 6000 chars) ---\n"
                    f"{output[-6000:]}", pytrace=False)
    assert LEFT_RUNNING not in output, (f"README section {section.title!r} leaves its twin running: end it with "
                              f"`.venv/bin/twin down`\n{output[-2000:]}")
    shutil.rmtree(work / ".twin", ignore_errors=True)
