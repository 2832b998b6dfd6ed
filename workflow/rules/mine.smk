rule mine:
    input:
        src_emb="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{src}.npy",
        src_sents="results/eval/prepared/{evalset}/{src}-{tgt}/{src}.tsv",
        tgt_emb="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{tgt}.npy",
        tgt_sents="results/eval/prepared/{evalset}/{src}-{tgt}/{tgt}.tsv",
        gold="results/eval/prepared/{evalset}/{src}-{tgt}/gold.tsv",
    output:
        pairs="results/mining/{variant}/{evalset}/{src}-{tgt}.tsv",
        metrics="results/mining/{variant}/{evalset}/{src}-{tgt}.metrics.json",
    log:
        "logs/mining/{variant}/{evalset}/{src}-{tgt}.log",
    benchmark:
        "benchmarks/mining/{variant}/{evalset}/{src}-{tgt}.tsv"
    conda:
        "../../envs/mining.yaml"
    threads: 1
    params:
        settings=as_json(config["mining"]["settings"]),
    shell:
        "lem mine --src-emb {input.src_emb} --src-sents {input.src_sents} "
        "--tgt-emb {input.tgt_emb} --tgt-sents {input.tgt_sents} --gold {input.gold} "
        "--settings '{params.settings}' --out-pairs {output.pairs} --out-metrics {output.metrics} > {log} 2>&1"
