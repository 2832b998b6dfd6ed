"""`lem report readme` (lem.report.readme): a note or a copied section holding a block marker is refused in one line
and the page left as it was (the next regeneration would find the marker twice); a CRLF page keeps its line
endings; a symbolic link stays one, the file it points to rewritten (issue 51). The block copied from the
report: tests/unit/test_report.py."""

from __future__ import annotations

import os

import pytest

from lem.cli import command
from lem.core.inputs import InputError
from lem.report.readme import README_BEGIN, README_END, readme_markers, update_readme

MD = "# Report\n\n## Bitext mining F1 (intersection)\n\nTABLE\n\n## Verdicts (generated)\n\n- VERDICT\n"
BEGIN, END = readme_markers("verdicts")


def page(tmp_path, text: str, name: str = "README.md"):
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize("marker", [BEGIN, END, README_BEGIN, README_END, readme_markers("ablation")[0]])
def test_a_note_holding_a_block_marker_is_refused_and_the_page_kept(tmp_path, marker):
    before = f"top\n{BEGIN}\nold\n{END}\n"
    path = page(tmp_path, before)
    with pytest.raises(InputError, match="^the note holds a block marker, .*a block cannot hold one") as err:
        update_readme(path, MD, f"the run of today {marker}", "verdicts", ("Verdicts",))
    assert len(str(err.value).splitlines()) == 1
    assert path.read_text() == before
    update_readme(path, MD, "<!-- a comment: end of the note -->", "verdicts", ("Verdicts",))  # not a marker
    update_readme(path, MD, "again", "verdicts", ("Verdicts",))  # the next regeneration goes through
    assert "again" in path.read_text()


def test_a_summary_whose_copied_section_holds_a_marker_is_refused_naming_its_line(tmp_path):
    before = f"{BEGIN}\nold\n{END}\n"
    path = page(tmp_path, before)
    md = MD + f"\n{END}\n\n## Other\n\n{BEGIN}\n"
    with pytest.raises(
        InputError, match=r"markdown holds a block marker at its line 11, .*section 'Verdicts "
    ):
        update_readme(path, md, "", "verdicts", ("Verdicts",))
    assert path.read_text() == before
    update_readme(path, MD + f"\n## Other\n\n{END}\n", "", "verdicts", ("Verdicts",))  # a section not copied
    assert "- VERDICT" in path.read_text()


def test_lem_report_readme_refuses_it_in_one_line(tmp_path, capsys):
    summary = tmp_path / "summary.md"
    summary.write_text(MD)
    path = page(tmp_path, f"{BEGIN}\nold\n{END}\n")
    argv = ["readme", "--summary", str(summary), "--readme", str(path), "--block", "verdicts", "--sections",
            "Verdicts", "--note", f"x {BEGIN}"]  # fmt: skip
    assert command("report")(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lem report readme: the note holds a block marker")


def test_a_crlf_page_keeps_its_line_endings(tmp_path):
    path = page(tmp_path, f"\ufefftop\r\n{BEGIN}\r\nold\r\n{END}\r\nbottom\r\n")
    update_readme(path, MD.replace("\n", "\r\n"), "NOTE", "verdicts", ("Verdicts",))
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbftop\r\n") and raw.endswith(b"\r\nbottom\r\n")
    assert raw.count(b"\n") == raw.count(b"\r\n") and b"- VERDICT\r\n" in raw and b"NOTE\r\n" in raw
    update_readme(path, MD, "NOTE", "verdicts", ("Verdicts",))
    assert path.read_bytes() == raw  # the same block again: the same bytes
    lf = page(tmp_path, f"{BEGIN}\nold\n{END}\n", "lf.md")
    update_readme(lf, MD, "NOTE", "verdicts", ("Verdicts",))
    assert b"\r" not in lf.read_bytes()


def test_a_symlinked_page_is_written_through_its_link(tmp_path):
    (tmp_path / "docs").mkdir()
    target = page(tmp_path / "docs", f"{BEGIN}\nold\n{END}\n", "results.md")
    target.chmod(0o664)
    link = tmp_path / "README.md"
    link.symlink_to(os.path.join("docs", "results.md"))
    update_readme(link, MD, "", "verdicts", ("Verdicts",))
    assert link.is_symlink() and os.readlink(link) == os.path.join("docs", "results.md")
    assert "- VERDICT" in target.read_text() and (target.stat().st_mode & 0o777) == 0o664
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["results.md"]  # no temporary left
