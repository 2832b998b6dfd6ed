rule curate:
    input:
        # the first pre-training seed's model (curation does not repeat over seeds)
        model=lambda w: model_for(w.variant, w.pair, PSEEDS[0]),
        corpus=lambda w: source_dep(config["curation"]["corpora"][w.pair]),
    output:
        scores="results/curation/{variant}/{pair}/scores.tsv",
        metrics="results/curation/{variant}/{pair}/metrics.json",
    log:
        "logs/curation/{variant}/{pair}.log",
    benchmark:
        "benchmarks/curation/{variant}/{pair}.tsv"
    conda:
        "../../envs/mining.yaml"
    threads: 1
    params:
        settings=as_json(
            {**config["curation"]["settings"], "embed": config["embedding"]}
        ),
        keys_json=lambda w: metrics_keys(
            "curation", variant=w.variant, dataset="noisy", pair=w.pair
        ),
    shell:
        "lem curate rank --model {input.model:q} --corpus {input.corpus:q} --settings '{params.settings}' "
        "--threads {threads} --keys '{params.keys_json}' --out-scores {output.scores:q} --out-metrics {output.metrics:q} > {log:q} 2>&1"
