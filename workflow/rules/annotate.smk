rule annotate_mono:
    input:
        text="results/corpus/guarded/mono/{lang}.txt",
        resources=lambda w: annotation_inputs(w.lang),
    output:
        "results/annotations/mono/{lang}.parquet",
    log:
        "logs/annotate/mono_{lang}.log",
    benchmark:
        "benchmarks/annotate/mono_{lang}.tsv"
    conda:
        "../../envs/annotate.yaml"
    threads: 1
    params:
        settings=lambda w: as_json(config["annotation"][w.lang]),
    shell:
        "lem annotate run --lang {wildcards.lang} --input {input.text} "
        "--settings '{params.settings}' --out {output} > {log} 2>&1"


rule annotate_para:
    input:
        text=lambda w: para_text(f"{w.src}-{w.tgt}", w.split),
        resources=lambda w: annotation_inputs(w.lang),
    output:
        "results/annotations/para/{src}-{tgt}.{split}.{lang}.parquet",
    log:
        "logs/annotate/para_{src}-{tgt}.{split}.{lang}.log",
    benchmark:
        "benchmarks/annotate/para_{src}-{tgt}.{split}.{lang}.tsv"
    conda:
        "../../envs/annotate.yaml"
    threads: 1
    params:
        settings=lambda w: as_json(config["annotation"][w.lang]),
        column=lambda w: 0 if w.lang == w.src else 1,
    shell:
        "lem annotate run --lang {wildcards.lang} --input {input.text} --column {params.column} "
        "--settings '{params.settings}' --out {output} > {log} 2>&1"
