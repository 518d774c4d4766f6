"""The README, docs/ and the pages in results/: no dead relative link or anchor, a README of at
most 200 lines, and no machine path or work-period label in any tracked text file."""

import glob
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_MAX_LINES = 200
# Written on another branch at the same time as the README that links it; drop once it has landed.

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def markdown_files(root: str) -> list[str]:
    files = [os.path.join(root, "README.md")]
    for folder in ("docs", "results"):  # the user docs, and the pages made from the results
        files += glob.glob(os.path.join(root, folder, "**", "*.md"), recursive=True)
    for wing in ("experiments", "benchmarks"):  # the studies' own READMEs
        files += glob.glob(os.path.join(root, wing, "**", "README.md"), recursive=True)
    return sorted(f for f in files if os.path.isfile(f))


def _prose_lines(text: str):
    """The lines outside fenced code blocks, with their line numbers."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose_lines(open(path, encoding="utf-8").read()):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(root: str) -> list[str]:
    """`file:line: target (why)` for every relative link or image whose file, or whose `#anchor`
    in a markdown file, does not exist."""
    problems = []
    for path in markdown_files(root):
        for number, line in _prose_lines(open(path, encoding="utf-8").read()):
            for target in LINK.findall(CODE_SPAN.sub("", line)):  # a code span links nothing
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                dest = (
                    os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                    if file_part
                    else path
                )
                where = f"{os.path.relpath(path, root)}:{number}: {target}"
                if not os.path.exists(dest):
                    problems.append(f"{where} (no such file)")
                    continue
                if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    problems.append(f"{where} (no heading #{anchor})")
    return problems


def test_every_relative_link_in_the_readme_and_docs_resolves():
    assert broken_links(ROOT) == []


def test_the_link_check_finds_a_dead_file_and_a_dead_anchor(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Some section: here\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md) [ok](docs/a.md#some-section-here) [web](https://example.com/x)\n"
        "```\n[in code](docs/nowhere.md)\n```\n`f[x](docs/nowhere.md)` in a code span\n"
        "[dead](docs/nowhere.md) ![dead picture](docs/b.png) [dead anchor](docs/a.md#nothing)\n"
    )
    problems = broken_links(str(tmp_path))
    assert [p.split(": ", 1)[1] for p in problems] == [
        "docs/nowhere.md (no such file)",
        "docs/b.png (no such file)",
        "docs/a.md#nothing (no heading #nothing)",
    ], problems


def test_slug_follows_github():
    assert (
        slug("Against a peer library on the same CPU") == "against-a-peer-library-on-the-same-cpu"
    )
    assert slug("The step on one H100") == "the-step-on-one-h100"
    assert slug("SCE, ReSSL and MoCo v2") == "sce-ressl-and-moco-v2"
    assert slug("`data.pipeline=device`: what it does") == "datapipelinedevice-what-it-does"


def test_the_readme_is_short():
    lines = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().splitlines()
    assert len(lines) <= README_MAX_LINES, len(lines)


# "session 12", "sessions 9 and 14": work-period labels that mean nothing outside the team
LABEL = re.compile(r"\bsessions? \d+", re.IGNORECASE)
MACHINE_PATH = "/work/"


def _tracked_text_files(root: str) -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.decode().split("\0") if p]


def test_no_machine_paths_or_work_period_labels_in_tracked_files():
    here = os.path.relpath(os.path.abspath(__file__), ROOT)
    problems = []
    for rel in _tracked_text_files(ROOT):
        path = os.path.join(ROOT, rel)
        if rel == here or not os.path.isfile(path):
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue  # pictures and other binary files
        for number, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH in line or LABEL.search(line):
                problems.append(f"{rel}:{number}: {line.strip()[:120]}")
    assert problems == [], "\n".join(problems)
