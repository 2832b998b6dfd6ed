rule mine:
    input:
        src_emb="results/embeddings/{variant}/seed{seed}/{evalset}/{src}-{tgt}/{src}.npy",
        src_sents="results/eval/prepared/{evalset}/{src}-{tgt}/{src}.tsv",
        tgt_emb="results/embeddings/{variant}/seed{seed}/{evalset}/{src}-{tgt}/{tgt}.npy",
        tgt_sents="results/eval/prepared/{evalset}/{src}-{tgt}/{tgt}.tsv",
        gold="results/eval/prepared/{evalset}/{src}-{tgt}/gold.tsv",
        checked=lambda w: RUN.leakage_checked("mining", w.evalset),
    output:
        pairs="results/mining/{variant}/seed{seed}/{evalset}/{src}-{tgt}.tsv",
        metrics="results/mining/{variant}/seed{seed}/{evalset}/{src}-{tgt}.metrics.json",
    log:
        "logs/mining/{variant}/seed{seed}/{evalset}/{src}-{tgt}.log",
    benchmark:
        "benchmarks/mining/{variant}/seed{seed}/{evalset}/{src}-{tgt}.tsv"
    conda:
        "../../envs/mining.yaml"
    threads: 1
    params:
        settings=as_json(RUN.settings_for("mine")),
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
