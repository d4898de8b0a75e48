"""The README's examples run as written: its Python blocks, and its non-interactive command
lines at a smaller size (fewer deals and matches), in a fresh working directory."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.train_extra

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BUNDLE = ROOT / "bots" / "ppo_vec_culo_expert"
# Commands that need no keyboard and finish in seconds once their sizes are cut.
RUN = {"simulate", "replay", "rules", "tournament"}
SIZES = {"--deals": 4, "--matches": 3}


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.M | re.S)


def command_lines() -> list[list[str]]:
    """Every ``arschloch`` line of the bash blocks, continuations joined, comments dropped."""
    lines = []
    for block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["arschloch"]:
                lines.append(words)
    return lines


def smaller(words: list[str]) -> list[str]:
    out = list(words)
    for i, word in enumerate(out[:-1]):
        if word in SIZES:
            out[i + 1] = str(min(int(out[i + 1]), SIZES[word]))
    return out


def arschloch_script() -> str:
    script = shutil.which("arschloch", path=str(Path(sys.executable).parent))
    assert script, "the arschloch console script is not installed beside this python"
    return script


OWN_BOT = next(b for b in blocks("python") if b.startswith("# mybots.py"))
SCRIPTS = [b for b in blocks("python") if b is not OWN_BOT]


def test_readme_has_the_examples_this_file_runs():
    assert len(SCRIPTS) >= 3
    assert {w[1] for w in command_lines()} >= RUN | {"train", "play", "export"}


@pytest.mark.parametrize("code", SCRIPTS, ids=[f"python-{i}" for i in range(len(SCRIPTS))])
def test_python_example_runs(code, tmp_path):
    # the example that loads "the bundle exported above" gets a shipped bundle instead
    code = code.replace('"bots/my_culo_bot"', repr(str(BUNDLE)))
    # the others name shipped bundles from the repository's root, where a reader runs them
    code = code.replace('"bots/', f'"{ROOT}/bots/')
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr[-3000:]


def test_command_lines_run_in_order(tmp_path):
    """In README order, in one directory: ``replay`` reads the record ``simulate`` wrote, and
    ``mybots:LowestFirst`` is the README's own-bot block saved as mybots.py there (the console
    script finds it in the working directory, as ``python -m`` would)."""
    (tmp_path / "mybots.py").write_text(OWN_BOT)
    ran = set()
    for words in command_lines():
        if words[1] not in RUN:
            continue
        res = subprocess.run([arschloch_script(), *smaller(words)[1:]], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, f"{shlex.join(words)}\n{res.stderr[-3000:]}"
        ran.add(words[1])
    assert ran == RUN
    assert (tmp_path / "runs" / "games.jsonl").is_file()
    assert (tmp_path / "runs" / "expert-vs-greedy" / "results.json").is_file()


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "bots").glob("*/*.md"))]


def heading_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("md", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_a_file_and_heading(md):
    links = re.findall(r"\]\(([^)\s]+)\)", md.read_text())
    for link in links:
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (md.parent / path).resolve() if path else md
        assert target.exists(), f"{md.name} links to {link}: no such file or folder"
        if anchor:
            headings = re.findall(r"^#+ (.*)$", target.read_text(), flags=re.M)
            assert anchor in {heading_anchor(h) for h in headings}, \
                f"{md.name} links to {link}: {target.name} has no such heading"
