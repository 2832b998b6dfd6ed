"""The rule files read every artifact's path from lem.run.paths, the one place it is written (a literal
`results/` path only where ALLOWED says why), and every rule that embed.smk and reference.smk generate under a
computed name is found by `grep "rule <name>"` for the shipped configs."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from lem.config_check import expand_data_root
from lem.plan import load_config
from lem.plan.power import PATTERNS
from lem.run import Run, paths

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "workflow" / "rules"

# The literal `results/` paths a rule file may hold, each said why; any other path comes from lem.run.paths.
ALLOWED = {
    "plan.smk": 1,  # its opening comment, the command that asks for the plan: `snakemake results/plan.txt`
}


@pytest.mark.parametrize("rule_file", sorted(p.name for p in RULES.glob("*.smk")))
def test_a_rule_file_writes_no_results_path_of_its_own(rule_file: str) -> None:
    text = (RULES / rule_file).read_text(encoding="utf-8")
    found = [
        f"{rule_file}:{n}: {ln.strip()}" for n, ln in enumerate(text.splitlines(), 1) if "results/" in ln
    ]
    assert len(found) <= ALLOWED.get(rule_file, 0), (
        "a literal results/ path in a rule file: add the path to src/lem/run/paths.py and read it there "
        "(`paths.NAME`, `artifact(paths.NAME, field=...)`), or say why in ALLOWED:\n" + "\n".join(found)
    )


def shipped_configs() -> dict[str, list[Path]]:
    """name -> the config files of every shipped config (an overlay after the config its header names: "an
    overlay of config/local.yaml", else the embedded default) and the suite's shrunken default."""
    out = {}
    for path in sorted((REPO / "config").glob("*.yaml")):
        header = "".join(ln for ln in path.read_text(encoding="utf-8").splitlines(True) if ln.startswith("#"))
        base = re.search(r"overlay of (?:config/([\w.-]+\.yaml))?", " ".join(header.lower().split()))
        files = [REPO / "config" / (base.group(1) or "config.yaml"), path] if base else [path]
        out[path.stem] = files
    out["test"] = [REPO / ".test" / "config" / "config.yaml"]
    return out


def generated_rules() -> dict[str, set[str]]:
    """Rule file -> the names of the rules it generates (lem.run.grid.Grid.embed_jobs, reference_jobs) for any
    shipped config."""
    out: dict[str, set[str]] = {"embed.smk": set(), "reference.smk": set()}
    for files in shipped_configs().values():
        run = Run(expand_data_root(load_config(files)))
        out["embed.smk"] |= {job.rule for job in run.grid.embed_jobs()}
        for suffix, _, _ in run.grid.reference_jobs():
            out["reference.smk"] |= {f"embed_reference_laser{suffix}", f"embed_reference{suffix}"}
    return out


def test_every_generated_rule_of_a_shipped_config_is_found_by_its_name() -> None:
    """embed.smk and reference.smk name their rules from the config (`name:`); the names of the shipped
    configs' rules are listed in each file's opening comment, in lines `# rule <name>, rule <name>, ...`,
    exactly those."""
    for rule_file, names in generated_rules().items():
        lines = (RULES / rule_file).read_text(encoding="utf-8").splitlines()
        listed = {n for ln in lines if ln.startswith("# rule ") for n in re.findall(r"\brule (\w+)", ln)}
        # the list to paste, wrapped at 110 characters with no name apart from its `rule`
        wrapped = textwrap.wrap(", ".join(f"rule\0{n}" for n in sorted(names)), 108, break_on_hyphens=False)
        listing = "\n".join(f"# {ln}".replace("\0", " ") for ln in wrapped)
        assert listed == names, (
            f"{rule_file}'s opening comment lists {sorted(listed - names)} that no shipped config generates and "
            f"misses {sorted(names - listed)}; the list:\n{listing}"
        )


def test_the_report_outputs_are_written_once() -> None:
    """rule report's outputs and what `all` asks of them come from paths.REPORT alone."""
    assert set(paths.REPORT_OUTPUTS) <= set(paths.REPORT.values())
    assert len(set(paths.REPORT.values())) == len(paths.REPORT)
    assert all(f.startswith(paths.REPORT_DIR + "/") for f in [*paths.REPORT.values(), paths.CONTROLS_GATE])


def test_lem_plan_power_finds_the_metrics_files_where_the_run_writes_them(tmp_path: Path) -> None:
    """`lem plan power`'s globs are lem.run.paths' templates: a metrics file of each task is found."""
    written = {
        "mining": paths.fill(
            paths.MINING, variant="lem", seed=1, evalset="news", pair="si-en", ext="metrics.json"
        ),
        "sentiment": paths.fill(paths.SENTIMENT, variant="lem", seed=1, dataset="cmcs", fseed=3),
        "curation": paths.fill(paths.CURATION, variant="lem", seed=1, pair="si-en", name="metrics.json"),
        "nmt": paths.fill(
            paths.NMT_FILE, ranking="lem", seed=1, pair="si-en", share=0.5, name="metrics.json"
        ),
    }
    for path in written.values():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    results = tmp_path / paths.RESULTS
    for task, pattern in PATTERNS.items():
        assert [p.relative_to(tmp_path).as_posix() for p in results.glob(pattern)] == [written[task]], task
