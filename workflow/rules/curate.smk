# Parallel data curation: the corpus of each pair is prepared once (streamed, capped, de-duplicated,
# rule-filtered: curation.filters) into the embedding layout; the embed stage embeds both sides for every variant
# (RUN.grid.embedding_files); `lem curate rank` scores each pair with mining's margin and ranks the corpus.


rule prepare_curation:
    input:
        # the corpus alone: NMT's held-out sets leave the training pairs at selection (nmt_select), so that
        # adding NMT (config/nmt.yaml) to a finished run changes no prepared corpus, hence no leakage guard
        # (the prepared corpus is one of its evaluation sets) and no pre-training
        corpus=lambda w: pair_source(
            config["curation"]["corpora"][f"{w.src}-{w.tgt}"]
        )[0],
    output:
        pairs=artifact(paths.PREPARED_CURATION, pair="{src}-{tgt}", name="pairs.tsv"),
        src=artifact(paths.PREPARED_CURATION, pair="{src}-{tgt}", name="{src}.tsv"),
        tgt=artifact(paths.PREPARED_CURATION, pair="{src}-{tgt}", name="{tgt}.tsv"),
        stats=artifact(paths.PREPARED_CURATION, pair="{src}-{tgt}", name="stats.json"),
    log:
        "logs/curation/prepare_{src}-{tgt}.log",
    conda:
        lem_env("core")
    threads: 1
    params:
        source=lambda w: pair_source(
            config["curation"]["corpora"][f"{w.src}-{w.tgt}"]
        )[1],
        cap=(
            ["--max-pairs", str(config["curation"]["max_pairs"])]
            if config["curation"].get("max_pairs")
            else []
        ),
        filters=as_json(rule_settings.prepare_curation(RUN)),
    shell:
        "lem curate prepare --pair {wildcards.src}-{wildcards.tgt} {params.source:q} {params.cap:q} "
        "--settings '{params.filters}' "
        '--out-dir "$(dirname {output.pairs:q})" > {log:q} 2>&1'


rule curate:
    input:
        # the embeddings of the row's model of that pre-training seed
        pairs=artifact(paths.PREPARED_CURATION, name="pairs.tsv"),
        src_sents=lambda w: artifact(
            paths.PREPARED_CURATION, pair=w.pair, name=f"{src_tgt(w.pair)[0]}.tsv"
        ),
        tgt_sents=lambda w: artifact(
            paths.PREPARED_CURATION, pair=w.pair, name=f"{src_tgt(w.pair)[1]}.tsv"
        ),
        src_emb=lambda w: artifact(
            paths.EMBEDDING,
            variant=w.variant,
            seed=w.seed,
            evalset="curation",
            pair=w.pair,
            lang=src_tgt(w.pair)[0],
            ext="npy",
        ),
        tgt_emb=lambda w: artifact(
            paths.EMBEDDING,
            variant=w.variant,
            seed=w.seed,
            evalset="curation",
            pair=w.pair,
            lang=src_tgt(w.pair)[1],
            ext="npy",
        ),
        checked=lambda w: RUN.sets.leakage_checked("curation", w.pair),
    output:
        scores=artifact(paths.CURATION, name="scores.tsv"),
        metrics=artifact(paths.CURATION, name="metrics.json"),
    log:
        "logs/curation/{variant}/seed{seed}/{pair}.log",
    benchmark:
        "benchmarks/curation/{variant}/seed{seed}/{pair}.tsv"
    wildcard_constraints:
        variant="|".join(RUN.curation_rows),
    conda:
        lem_env("mining")
    threads: 1
    params:
        # mining's margin alone (lem.run.curation_mining): its retrieval, threshold or index rerun no curation
        settings=as_json(rule_settings.curate(RUN)),
        keys_json=lambda w: metrics_keys(
            "curation", variant=w.variant, dataset="noisy", pair=w.pair, seed=w.seed
        ),
    shell:
        "lem curate rank --pairs {input.pairs:q} --src-emb {input.src_emb:q} --tgt-emb {input.tgt_emb:q} "
        "--src-sents {input.src_sents:q} --tgt-sents {input.tgt_sents:q} --settings '{params.settings}' "
        "--keys '{params.keys_json}' --out-scores {output.scores:q} --out-metrics {output.metrics:q} > {log:q} 2>&1"


rule curate_control:
    input:
        pairs=artifact(paths.PREPARED_CURATION, name="pairs.tsv"),
    output:
        artifact(paths.CURATION, variant="{kind}", name="scores.tsv"),
    log:
        "logs/curation/{kind}/seed{seed}/{pair}.log",
    wildcard_constraints:
        kind="random|oracle",
    conda:
        lem_env("core")
    threads: 1
    shell:
        "lem curate control --pairs {input.pairs:q} --kind {wildcards.kind} --seed {wildcards.seed} "
        "--out {output:q} > {log:q} 2>&1"
