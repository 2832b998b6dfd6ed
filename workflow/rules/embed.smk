rule embed:
    input:
        model=lambda w: model_for(w.variant, f"{w.src}-{w.tgt}"),
        sentences="results/eval/prepared/{evalset}/{src}-{tgt}/{lang}.tsv",
    output:
        emb="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{lang}.npy",
        ids="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{lang}.ids.txt",
        meta="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{lang}.meta.json",
    log:
        "logs/embed/{variant}/{evalset}/{src}-{tgt}/{lang}.log",
    benchmark:
        "benchmarks/embed/{variant}/{evalset}/{src}-{tgt}/{lang}.tsv"
    conda:
        "../../envs/train.yaml"
    threads: 1
    params:
        settings=as_json(config["embedding"]),
    shell:
        "lem embed --model {input.model} --sentences {input.sentences} "
        "--settings '{params.settings}' --out {output.emb} > {log} 2>&1"
