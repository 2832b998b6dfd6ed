# NMT on the curated corpus (config `curation.nmt`): for each pair of `curation.nmt.pairs` and pre-training
# seed, each variant's (and reference encoder's) ranking, the random ranking and (labelled corpora,
# `curation.nmt.oracle`) the oracle ranking keep their top share (`curation.settings.keep_fractions`),
# `no_filter` keeps every pair; one NMT run each (the same recipe, `curation.nmt.settings`, trained with a
# seed derived from the pre-training seed, lem.nmt.settings.training_seed: never the rankings' own seed)
# translates the test set and scores BLEU and chrF (sacrebleu, signatures in metrics.json, per-sentence BLEU
# statistics in its `items`). The report compares the rows by a paired test over seeds (lem.evidence.compare), once the oracle
# beats random.


from lem.core.gpu_share import training_resources


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
            f"results/curation/random/seed{w.seed}/{w.pair}/scores.tsv"
            if w.ranking == "no_filter"
            else f"results/curation/{w.ranking}/seed{w.seed}/{w.pair}/scores.tsv"
        ),
        pairs="results/eval/prepared/curation/{pair}/pairs.tsv",
    output:
        "results/nmt/{ranking}/seed{seed}/{pair}/keep{share}.train.tsv",
    log:
        "logs/nmt/{ranking}/seed{seed}/{pair}/select_{share}.log",
    wildcard_constraints:
        ranking="|".join(RUN.curation_rows + RUN.nmt_controls),
        share=r"[0-9.]+",
    conda:
        "../../envs/core.yaml"
    threads: 1
    shell:
        "lem nmt select --ranking {input.ranking:q} --pairs {input.pairs:q} --share {wildcards.share} "
        "--out {output:q} > {log:q} 2>&1"


rule nmt_run:
    input:
        train="results/nmt/{ranking}/seed{seed}/{pair}/keep{share}.train.tsv",
        valid="results/eval/prepared/nmt/{pair}/valid.tsv",
        test="results/eval/prepared/nmt/{pair}/test.tsv",
        checked=lambda w: RUN.leakage_checked("nmt", w.pair),
        model=[RUN.nmt_hub_model()] if RUN.nmt_hub_model() else [],
    output:
        metrics="results/nmt/{ranking}/seed{seed}/{pair}/keep{share}/metrics.json",
        hyps="results/nmt/{ranking}/seed{seed}/{pair}/keep{share}/hypotheses.txt",
        refs="results/nmt/{ranking}/seed{seed}/{pair}/keep{share}/references.txt",
        model=directory("results/nmt/{ranking}/seed{seed}/{pair}/keep{share}/model"),
    log:
        "logs/nmt/{ranking}/seed{seed}/{pair}/keep{share}.log",
    benchmark:
        "benchmarks/nmt/{ranking}/seed{seed}/{pair}/keep{share}.tsv"
    wildcard_constraints:
        ranking="|".join(RUN.curation_rows + RUN.nmt_controls),
        share=r"[0-9.]+",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        **training_resources(config["resources"]),  # lem.core.gpu_share: a GPU, or a share of one
    params:
        settings=lambda w: as_json(RUN.settings_for("nmt_run", seed=w.seed)),
        keys_json=lambda w: metrics_keys(
            "nmt",
            variant=w.ranking,
            dataset="curation",
            pair=w.pair,
            share=w.share,
            seed=w.seed,
        ),
    shell:
        "lem nmt run --train {input.train:q} --valid {input.valid:q} --test {input.test:q} "
        "--pair {wildcards.pair:q} --settings '{params.settings}' --keys '{params.keys_json}' "
        '--out-dir "$(dirname {output.metrics:q})" > {log:q} 2>&1'


if RUN.nmt_hub_model():

    rule fetch_nmt_model:
        output:
            directory(RUN.nmt_hub_model()),
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
