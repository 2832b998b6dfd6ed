# NMT on the curated corpus (config `curation.nmt`): for each pair of `curation.nmt.pairs`, each variant's (and
# reference encoder's) ranking and the random ranking keep their top share (`curation.settings.keep_fractions`), `no_filter` keeps
# every pair; one NMT run each (the same recipe, `curation.nmt.settings`) translates the test set and
# scores BLEU and chrF (sacrebleu, signatures in metrics.json); sacrebleu's paired bootstrap compares every
# row with mlm_tlm at the same share, and mlm_tlm with base.


from lem.gpu_share import training_resources


rule nmt_heldout:
    input:
        lambda w: pair_source(config["curation"]["nmt"][w.split][w.pair])[0],
    output:
        "results/eval/prepared/nmt/{pair}/{split}.tsv",
    log:
        "logs/nmt/prepare_{pair}_{split}.log",
    wildcard_constraints:
        split="valid|test",
    conda:
        "../../envs/core.yaml"
    threads: 1
    params:
        source=lambda w: pair_source(config["curation"]["nmt"][w.split][w.pair])[1],
    shell:
        "lem nmt heldout {params.source:q} --out {output:q} > {log:q} 2>&1"


rule nmt_select:
    input:
        ranking=lambda w: (
            f"results/curation/random/{w.pair}/scores.tsv"
            if w.ranking == "no_filter"
            else f"results/curation/{w.ranking}/{w.pair}/scores.tsv"
        ),
        pairs="results/eval/prepared/curation/{pair}/pairs.tsv",
    output:
        "results/nmt/{ranking}/{pair}/keep{share}.train.tsv",
    log:
        "logs/nmt/{ranking}/{pair}/select_{share}.log",
    wildcard_constraints:
        ranking="|".join(CURATION_ROWS + NMT_CONTROLS),
        share=r"[0-9.]+",
    conda:
        "../../envs/core.yaml"
    threads: 1
    shell:
        "lem nmt select --ranking {input.ranking:q} --pairs {input.pairs:q} --share {wildcards.share} "
        "--out {output:q} > {log:q} 2>&1"


rule nmt_run:
    input:
        train="results/nmt/{ranking}/{pair}/keep{share}.train.tsv",
        valid="results/eval/prepared/nmt/{pair}/valid.tsv",
        test="results/eval/prepared/nmt/{pair}/test.tsv",
        model=[nmt_hub_model()] if nmt_hub_model() else [],
    output:
        metrics="results/nmt/{ranking}/{pair}/keep{share}/metrics.json",
        hyps="results/nmt/{ranking}/{pair}/keep{share}/hypotheses.txt",
        refs="results/nmt/{ranking}/{pair}/keep{share}/references.txt",
        model=directory("results/nmt/{ranking}/{pair}/keep{share}/model"),
    log:
        "logs/nmt/{ranking}/{pair}/keep{share}.log",
    benchmark:
        "benchmarks/nmt/{ranking}/{pair}/keep{share}.tsv"
    wildcard_constraints:
        ranking="|".join(CURATION_ROWS + NMT_CONTROLS),
        share=r"[0-9.]+",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        **training_resources(config["resources"]),  # lem.gpu_share: a GPU, or a share of one
    params:
        settings=nmt_settings(),
        keys_json=lambda w: metrics_keys(
            "nmt", variant=w.ranking, dataset="curation", pair=w.pair, share=w.share
        ),
    shell:
        "lem nmt run --train {input.train:q} --valid {input.valid:q} --test {input.test:q} "
        "--pair {wildcards.pair:q} --settings '{params.settings}' --keys '{params.keys_json}' "
        '--out-dir "$(dirname {output.metrics:q})" > {log:q} 2>&1'


rule nmt_compare:
    input:
        lambda w: [
            f"{d}/metrics.json"
            for d in nmt_compare_runs(w.pair, w.share, w.baseline).values()
        ],
    output:
        "results/nmt/{pair}/keep{share}.vs_{baseline}.json",
    log:
        "logs/nmt/{pair}/keep{share}.vs_{baseline}.log",
    wildcard_constraints:
        baseline="|".join(VARIANTS),
        share=r"[0-9.]+",
    conda:
        "../../envs/core.yaml"
    threads: 1
    params:
        runs=lambda w: [
            f"{r}={d}"
            for r, d in nmt_compare_runs(w.pair, w.share, w.baseline).items()
        ],
        settings=as_json(config["curation"]["nmt"]["settings"]),
        keys_json=lambda w: metrics_keys(
            "nmt_compare",
            baseline=w.baseline,
            dataset="curation",
            pair=w.pair,
            share=w.share,
        ),
    shell:
        "lem nmt compare --runs {params.runs:q} --baseline {wildcards.baseline:q} "
        "--settings '{params.settings}' --keys '{params.keys_json}' --out {output:q} > {log:q} 2>&1"


if nmt_hub_model():

    rule fetch_nmt_model:
        output:
            directory(nmt_hub_model()),
        log:
            "logs/download/nmt_model.log",
        retries: 1
        conda:
            "../../envs/core.yaml"
        threads: 1
        params:
            repo=config["curation"]["nmt"]["settings"]["model"],
            revision=config["curation"]["nmt"]["settings"].get("revision") or "main",
            unpinned=(
                ["--allow-unpinned"]
                if config["curation"]["nmt"]["settings"].get("allow_unpinned")
                else []
            ),
        shell:
            "lem data fetch-hf --repo {params.repo:q} --revision {params.revision:q} --kind model "
            "--include '*.json' '*.safetensors' '*.model' {params.unpinned:q} "
            "--out {output:q} > {log:q} 2>&1"
