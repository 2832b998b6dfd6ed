# A mining set and pair at evaluation time (lem.data.leakage.drop_leaked_items): its sentences equal to the
# guarded pre-training text dropped with their gold links, counted and listed in stats.json; the set's own
# rule (mining.evalsets.<name>.leakage) is its params, so a change reruns only this set's jobs.
rule leakage_items:
    input:
        src=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="{src}.tsv"),
        tgt=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="{tgt}.tsv"),
        gold=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="gold.tsv"),
        stats=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="stats.json"),
        train=lambda w: RUN.sets.train_text_of([w.src, w.tgt]),
        report=LEAKAGE_REPORT,
    output:
        src=artifact(paths.CLEAN, pair="{src}-{tgt}", name="{src}.tsv"),
        tgt=artifact(paths.CLEAN, pair="{src}-{tgt}", name="{tgt}.tsv"),
        gold=artifact(paths.CLEAN, pair="{src}-{tgt}", name="gold.tsv"),
        stats=artifact(paths.CLEAN, pair="{src}-{tgt}", name="stats.json"),
    log:
        "logs/eval/leakage_items_{evalset}_{src}-{tgt}.log",
    conda:
        lem_env("core")
    threads: 1
    params:
        settings=lambda w: as_json(rule_settings.leakage_items(RUN, evalset=w.evalset)),
    shell:
        "lem data leakage-items --name {wildcards.evalset:q} --pair {wildcards.src}-{wildcards.tgt} "
        '--prepared "$(dirname {input.gold:q})" --train {input.train:q} --guard-report {input.report:q} '
        "--settings '{params.settings}' --out-dir \"$(dirname {output.gold:q})\" > {log:q} 2>&1"


rule mine:
    input:
        src_emb=artifact(paths.EMBEDDING, pair="{src}-{tgt}", lang="{src}", ext="npy"),
        src_sents=artifact(paths.CLEAN, pair="{src}-{tgt}", name="{src}.tsv"),
        tgt_emb=artifact(paths.EMBEDDING, pair="{src}-{tgt}", lang="{tgt}", ext="npy"),
        tgt_sents=artifact(paths.CLEAN, pair="{src}-{tgt}", name="{tgt}.tsv"),
        gold=artifact(paths.CLEAN, pair="{src}-{tgt}", name="gold.tsv"),
    output:
        pairs=artifact(paths.MINING, pair="{src}-{tgt}", ext="tsv"),
        metrics=artifact(paths.MINING, pair="{src}-{tgt}", ext="metrics.json"),
    log:
        "logs/mining/{variant}/seed{seed}/{evalset}/{src}-{tgt}.log",
    benchmark:
        "benchmarks/mining/{variant}/seed{seed}/{evalset}/{src}-{tgt}.tsv"
    conda:
        lem_env("mining")
    threads: 1
    params:
        settings=as_json(rule_settings.mine(RUN)),
        keys_json=lambda w: metrics_keys(
            "mining",
            variant=w.variant,
            dataset=w.evalset,
            pair=f"{w.src}-{w.tgt}",
            seed=w.seed,
        ),
    shell:
        "lem mine run --src-emb {input.src_emb:q} --src-sents {input.src_sents:q} "
        "--tgt-emb {input.tgt_emb:q} --tgt-sents {input.tgt_sents:q} --gold {input.gold:q} "
        "--settings '{params.settings}' --keys '{params.keys_json}' --out-pairs {output.pairs:q} --out-metrics {output.metrics:q} > {log:q} 2>&1"
