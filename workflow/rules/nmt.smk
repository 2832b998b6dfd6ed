# NMT on the curated corpus (config `curation.nmt`): for each pair of `curation.nmt.pairs` and pre-training
# seed, each variant's (and reference encoder's) ranking, the random ranking and (labelled corpora,
# `curation.nmt.oracle`) the oracle ranking keep their top share (`curation.settings.keep_fractions`),
# `no_filter` keeps every pair; one NMT run each (the same recipe, `curation.nmt.settings`, trained with a
# seed derived from the pre-training seed, lem.nmt.settings.training_seed: never the rankings' own seed)
# translates the test set and scores BLEU and chrF (sacrebleu, signatures in metrics.json, per-sentence BLEU
# statistics in its `items`). The report compares the rows by a paired test over seeds (lem.evidence.compare), once the oracle
# beats random.
# The held-out sets leak into neither the training pairs nor the pre-training text, and adding them to a finished run
# rewrites nothing it read: a corpus pair with a side in them is dropped at selection (nmt_select; the curation corpus
# is prepared without them), and the pre-training text is guarded against them when they are configured before the
# leakage guard runs, else checked against them (leakage_check, kind nmt: refused by name, with the count and an
# example, if they share a sentence), so config/nmt.yaml over a finished default plans NMT's jobs and the report alone.


from lem.core.gpu_share import training_resources


rule nmt_heldout:
    input:
        lambda w: pair_source(config["curation"]["nmt"][w.split][w.pair])[0],
    output:
        paths.PREPARED_NMT,
    log:
        "logs/nmt/prepare_{pair}_{split}.log",
    wildcard_constraints:
        split="valid|test",
    conda:
        lem_env("core")
    threads: 1
    params:
        source=lambda w: pair_source(config["curation"]["nmt"][w.split][w.pair])[1],
    shell:
        "lem nmt heldout {params.source:q} --out {output:q} > {log:q} 2>&1"


rule nmt_select:
    input:
        ranking=lambda w: (
            artifact(
                paths.CURATION,
                variant="random",
                seed=w.seed,
                pair=w.pair,
                name="scores.tsv",
            )
            if w.ranking == "no_filter"
            else artifact(
                paths.CURATION,
                variant=w.ranking,
                seed=w.seed,
                pair=w.pair,
                name="scores.tsv",
            )
        ),
        pairs=artifact(paths.PREPARED_CURATION, name="pairs.tsv"),
        # the pair's validation and test sets: a corpus pair with a side among their sentences is dropped
        # before the share is taken (the curation corpus is prepared without them: curate.smk)
        heldout=lambda w: RUN.sets.nmt_eval_files([w.pair]),
    output:
        paths.NMT_TRAIN,
    log:
        "logs/nmt/{ranking}/seed{seed}/{pair}/select_{share}.log",
    wildcard_constraints:
        ranking="|".join(RUN.curation_rows + RUN.grid.nmt_controls),
        share=r"[0-9.]+",
    conda:
        lem_env("core")
    threads: 1
    shell:
        "lem nmt select --ranking {input.ranking:q} --pairs {input.pairs:q} --share {wildcards.share} "
        "--exclude {input.heldout:q} --out {output:q} > {log:q} 2>&1"


rule nmt_run:
    input:
        train=paths.NMT_TRAIN,
        valid=artifact(paths.PREPARED_NMT, split="valid"),
        test=artifact(paths.PREPARED_NMT, split="test"),
        checked=lambda w: RUN.sets.leakage_checked("nmt", w.pair),
        model=[RUN.grid.nmt_hub_model()] if RUN.grid.nmt_hub_model() else [],
    output:
        metrics=artifact(paths.NMT_FILE, name="metrics.json"),
        hyps=artifact(paths.NMT_FILE, name="hypotheses.txt"),
        refs=artifact(paths.NMT_FILE, name="references.txt"),
        model=directory(artifact(paths.NMT_FILE, name="model")),
    log:
        "logs/nmt/{ranking}/seed{seed}/{pair}/keep{share}.log",
    benchmark:
        "benchmarks/nmt/{ranking}/seed{seed}/{pair}/keep{share}.tsv"
    wildcard_constraints:
        ranking="|".join(RUN.curation_rows + RUN.grid.nmt_controls),
        share=r"[0-9.]+",
    conda:
        lem_env("train")
    threads: 1
    resources:
        **training_resources(config["resources"]),  # lem.core.gpu_share: a GPU, or a share of one
    params:
        settings=lambda w: as_json(rule_settings.nmt_run(RUN, seed=w.seed)),
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


if RUN.grid.nmt_hub_model():

    rule fetch_nmt_model:
        output:
            directory(RUN.grid.nmt_hub_model()),
        log:
            "logs/download/nmt_model.log",
        retries: 1
        conda:
            lem_env("core")
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
