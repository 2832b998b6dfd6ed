"""What a rule that reads a folder of one's own data declares as its input: the files in it that its verb reads.

A folder's modification time changes only when an entry is added to it or removed from it, so a rule whose
input is the folder is not rerun when a file inside it is edited (a stale result, the worst defect), and is
rerun from the start whenever the folder is copied again, even with the same content (every session on a
machine that provisions its data anew). Declared file by file, an edit reruns the rule, and a copy with the
same content does not: Snakemake compares the checksum it recorded for each input up to
`max-checksum-file-size` (profiles/default/config.yaml) before it trusts a newer modification time.

A source the pipeline fetches, unpacks or writes itself (`raw:`, `unpacked:`, a path in `results/` or
`resources/`, such as the embedded config's generated news folder) stays one input: its folder is a rule's
output, which links the rules. So does a folder whose files cannot be found, and the job's own error then
names what is missing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from lem.data.ner import multiner_files
from lem.data.news import news_files
from lem.run.paths import source_dep

# the folders of a run that its rules write (a source there is a rule's output, never one's own data)
RUN_OUTPUT_ROOTS = ("results/", "resources/")


def source_deps(spec: str, files: Callable[[str], Iterable[str | os.PathLike]]) -> list[str]:
    """The input of a rule reading `spec`: `files(folder)` where `spec` is a plain path to a folder, else (or
    where `files` cannot find them) `source_dep(spec)`."""
    if spec.startswith(("raw:", "unpacked:", *RUN_OUTPUT_ROOTS)) or not Path(spec).is_dir():
        return [source_dep(spec)]
    try:
        found = [str(p) for p in files(spec)]
    except (
        OSError,
        ValueError,
    ):  # not there or not one: the verb fails on it, naming the file and what it expected
        return [source_dep(spec)]
    return found or [source_dep(spec)]


def news_inputs(evalset: Mapping[str, Any], pair: str) -> list[str]:
    """The input of `lem data news` for a news set (`mining.evalsets.<name>`: its `root` and one `site` or
    several pooled) and a pair (lem.data.news.news_files)."""
    return source_deps(evalset["root"], lambda root: news_files(root, evalset["site"], pair))


def multiner_inputs(spec: str) -> list[str]:
    """The input of `lem data multiner` (lem.data.ner.multiner_files)."""
    return source_deps(spec, multiner_files)
