# Sources of the paper-scale configuration: pinned downloads, unpacking, MADLAD-400 extraction, and the
# conversions that turn real datasets into the corpus files of docs/contracts.md. Nothing here runs for the
# embedded default (its `sources` section is empty).


# A download lands in resources/downloads/<name> (where a copy placed by hand goes too), is checked against
# its sha256 pin (or refused with none, unless allow_unpinned), then linked to resources/raw/<name>, which
# every consumer reads; resources/provenance/<name>.json records the pin and the sha256 observed.
rule fetch_file:
    output:
        raw=artifact(paths.RAW, name="{source}"),
        provenance="resources/provenance/{source}.json",
    log:
        "logs/download/{source}.log",
    retries: 1
    conda:
        lem_env("core")
    threads: 1
    params:
        url=lambda w: config["sources"]["files"][w.source]["url"],
        sha=lambda w: sha256_arg(config["sources"]["files"][w.source]),
        download=lambda w: f"resources/downloads/{w.source}",
        unpinned=lambda w: (
            ["--allow-unpinned"]
            if config["sources"]["files"][w.source].get("allow_unpinned", False)
            else []
        ),
    shell:
        "lem data fetch-url --url {params.url:q} {params.sha:q} {params.unpinned:q} "
        "--download {params.download:q} --out {output.raw:q} --provenance {output.provenance:q} > {log:q} 2>&1"


rule unpack_archive:
    input:
        artifact(paths.RAW, name="{source}"),
    output:
        directory(artifact(paths.UNPACKED, path="{source}")),
    log:
        "logs/download/unpack_{source}.log",
    conda:
        lem_env("core")
    threads: 1
    shell:
        "lem data unpack --archive {input:q} --out {output:q} > {log:q} 2>&1"


rule madlad:
    output:
        text="resources/madlad/{lang}.txt",
        stats="resources/madlad/{lang}.stats.json",
        provenance="resources/madlad/{lang}.provenance.json",
    log:
        "logs/download/madlad_{lang}.log",
    benchmark:
        "benchmarks/download/madlad_{lang}.tsv"
    conda:
        lem_env("core")
    threads: 1
    resources:
        runtime=24 * 60,
    params:
        settings=lambda w: as_json(rule_settings.madlad(RUN, lang=w.lang)),
        unpinned=lambda w: (
            ["--allow-unpinned"]
            if config["sources"]["madlad"]["allow_unpinned"]
            else []
        ),
    shell:
        "lem data madlad --lang {wildcards.lang} --settings '{params.settings}' {params.unpinned:q} "
        "--out {output.text:q} --stats {output.stats:q} --provenance {output.provenance:q} > {log:q} 2>&1"


rule line_aligned_pairs:
    input:
        src=lambda w: source_dep(config["sources"]["line_aligned"][w.name]["src"]),
        tgt=lambda w: source_dep(config["sources"]["line_aligned"][w.name]["tgt"]),
    output:
        pairs="resources/pairs/{name}.tsv",
        stats="resources/pairs/{name}.stats.json",
    log:
        "logs/download/pairs_{name}.log",
    wildcard_constraints:
        name="|".join(re.escape(n) for n in config["sources"].get("line_aligned", {}))
        or "none",
    conda:
        lem_env("core")
    threads: 1
    params:
        src=lambda w: source_file(config["sources"]["line_aligned"][w.name]["src"]),
        tgt=lambda w: source_file(config["sources"]["line_aligned"][w.name]["tgt"]),
        fmt=lambda w: config["sources"]["line_aligned"][w.name].get("format", "plain"),
    shell:
        "lem data lines --src {params.src:q} --tgt {params.tgt:q} --format {params.fmt:q} "
        "--out {output.pairs:q} --stats {output.stats:q} > {log:q} 2>&1"


rule multiner_split:
    input:
        lambda w: multiner_inputs(config["sources"]["multiner"]["dir"]),
    output:
        expand(
            "resources/multiner/{lang}.{split}.conll",
            lang=["en", "si", "ta"],
            split=["train", "valid", "test"],
        ),
        stats="resources/multiner/stats.json",
    log:
        "logs/download/multiner_split.log",
    conda:
        lem_env("core")
    threads: 1
    params:
        dir=lambda w: source_file(config["sources"]["multiner"]["dir"]),
        settings=lambda w: as_json(rule_settings.multiner_split(RUN)),
    shell:
        "lem data multiner --dir {params.dir:q} --settings '{params.settings}' "
        "--out-dir resources/multiner > {log:q} 2>&1"


rule multiner_text:
    input:
        "resources/multiner/{lang}.{split}.conll",
    output:
        "resources/multiner/{lang}.{split}.txt",
    log:
        "logs/download/multiner_text_{lang}.{split}.log",
    wildcard_constraints:
        split="train|valid|test",  # the test split too: held-out pairs (config/local.yaml's NMT test set)
    conda:
        lem_env("core")
    threads: 1
    shell:
        "lem data conll-text --input {input:q} --out {output:q} > {log:q} 2>&1"


rule multiner_pairs:
    input:
        src="resources/multiner/{src}.{split}.txt",
        tgt="resources/multiner/{tgt}.{split}.txt",
    output:
        "resources/pairs/multiner_{src}-{tgt}.{split}.tsv",
    log:
        "logs/download/multiner_pairs_{src}-{tgt}.{split}.log",
    wildcard_constraints:
        split="train|valid|test",
    conda:
        lem_env("core")
    threads: 1
    shell:
        "lem data lines --src {input.src:q} --tgt {input.tgt:q} --out {output:q} > {log:q} 2>&1"


rule multiner_all:
    input:
        expand("resources/multiner/{lang}.{{split}}.conll", lang=["en", "si", "ta"]),
    output:
        "resources/multiner/all.{split}.conll",
    log:
        "logs/download/multiner_all_{split}.log",
    conda:
        lem_env("core")
    threads: 1
    shell:
        "cat {input:q} > {output:q} 2> {log:q}"


if (
    config["base_model"]["source"] == "pretrained"
    and "path" not in config["base_model"]
):

    rule fetch_base_model:
        output:
            directory(RUN.base_model_dir()),
        log:
            "logs/download/base_model.log",
        retries: 1
        conda:
            lem_env("core")
        threads: 1
        params:
            repo=config["base_model"]["hub"]["repo"],
            revision=config["base_model"]["hub"]["revision"],
            unpinned=(
                ["--allow-unpinned"]
                if config["base_model"]["hub"]["allow_unpinned"]
                else []
            ),
        shell:
            "lem data fetch-hf --repo {params.repo:q} --revision {params.revision:q} --kind model "
            "--include '*.json' '*.safetensors' 'sentencepiece.bpe.model' {params.unpinned:q} "
            "--out {output:q} > {log:q} 2>&1"

    # What the settings need of the model (layers, hidden size, heads, positions) is checked at planning
    # once the model is here; on the run that fetches it, this job checks it before any training job.
    rule check_base_model:
        input:
            RUN.base_model_dir(),
        output:
            BASE_MODEL_CHECK,
        log:
            "logs/download/check_base_model.log",
        conda:
            lem_env("core")
        threads: 1
        params:
            config=as_json(rule_settings.check_base_model(RUN)),
        shell:
            "lem plan check-model --config-json '{params.config}' --out {output:q} > {log:q} 2>&1"
