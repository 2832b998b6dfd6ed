"""The README and the docs pages (issue 36): the README stays one screen-scroll (under 200 lines), every
relative link of the README, docs/*.md and config/README.md reaches a file of the repository, and every
`#anchor` a heading of the page it points to; the generated result blocks live in docs/results.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _outside_code(text: str) -> str:
    """The page without its fenced code blocks and inline code (a link there is an example, not a link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped but '-' and '_', spaces as '-'."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


def links(path: Path) -> list[str]:
    return LINK.findall(_outside_code(path.read_text(encoding="utf-8")))


def test_slug_matches_githubs_rule():
    assert slug("On the real data (`config/local.yaml`)") == "on-the-real-data-configlocalyaml"
    assert slug("How many seeds") == "how-many-seeds"
    assert slug("Deploy, configure, run") == "deploy-configure-run"


def test_link_finder_skips_code_and_images(tmp_path):
    page = tmp_path / "x.md"
    page.write_text("[a](b.md) `[c](d.md)` ![e](f.png)\n```\n[g](h.md)\n```\n[i](j.md#k)\n", encoding="utf-8")
    assert links(page) == ["b.md", "j.md#k"]


def test_readme_is_one_screen_scroll():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines: move detail to a docs/ page"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_reaches_a_file_and_heading(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ...: not checked offline
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists():
            broken.append(f"{target}: no file {path.relative_to(REPO) if REPO in path.parents else path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading '#{anchor}' in {path.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_every_docs_page_is_reached_from_the_readme():
    readme = set(links(REPO / "README.md"))
    missing = [p.name for p in sorted((REPO / "docs").glob("*.md")) if f"docs/{p.name}" not in readme]
    assert not missing, f"README.md links to no {missing}"


def test_generated_result_blocks_live_in_docs_results():
    from lem.report.readme import README_BEGIN, README_END, readme_markers

    results = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    for begin, end in [
        (README_BEGIN, README_END),
        *(readme_markers(b) for b in ("local", "ablation", "evidence", "local_evidence")),
    ]:
        assert results.count(begin) == 1 and results.count(end) == 1, begin
        assert results.index(begin) < results.index(end)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    begin, end = readme_markers("verdicts")
    assert readme.count(begin) == 1 and readme.index(begin) < readme.index(end)
    real_begin, real_end = readme_markers("verdicts_real")  # real text first, then the generated world's
    assert readme.count(real_begin) == 1 and readme.index(real_begin) < readme.index(real_end) < readme.index(
        begin
    )
    assert README_BEGIN not in readme


def test_readme_block_copies_only_the_sections_asked_for(tmp_path):
    from lem.core.inputs import InputError
    from lem.report.readme import readme_markers, update_readme

    md = "# Report\n\n## Bitext mining F1 (intersection)\n\nTABLE\n\n## Verdicts (generated)\n\n- VERDICT\n\n## Other\n\nX\n"
    begin, end = readme_markers("verdicts")
    page = tmp_path / "README.md"
    page.write_text(f"top\n{begin}\nold\n{end}\nbottom\n", encoding="utf-8")
    update_readme(page, md, "NOTE", "verdicts", ("Verdicts",))
    text = page.read_text(encoding="utf-8")
    assert "- VERDICT" in text and "TABLE" not in text and "old" not in text and "NOTE" in text
    assert text.startswith("top\n") and text.endswith(f"{end}\nbottom\n")
    with pytest.raises(InputError, match="no section titled 'Nope'"):
        update_readme(page, md, "", "verdicts", ("Nope",))
    assert "- VERDICT" in page.read_text(encoding="utf-8")  # a refused update leaves the page as it was
