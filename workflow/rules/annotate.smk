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


rule train_ner:
    input:
        base=lambda w: ner_base_model(),
        train=lambda w: config["ner_model"]["train"],
        valid=lambda w: config["ner_model"].get("valid", []),
    output:
        directory("results/ner/model"),
    log:
        "logs/annotate/train_ner.log",
    benchmark:
        "benchmarks/annotate/train_ner.tsv"
    conda:
        "../../envs/annotate.yaml"
    threads: workflow.cores
    resources:
        gpu=config["resources"]["gpu_training"],
        mem_mb=config["resources"]["mem_mb_training"],
        runtime=config["resources"]["runtime_training"],
    params:
        settings=lambda w: as_json(
            {"seed": config["seed"], **config["ner_model"].get("settings", {})}
        ),
        valid=lambda w: (
            f"--valid {config['ner_model']['valid']}"
            if config["ner_model"].get("valid")
            else ""
        ),
    shell:
        "lem annotate train-ner --base-model {input.base} --train {input.train} {params.valid} "
        "--settings '{params.settings}' --out {output} > {log} 2>&1"


rule split_gold:
    input:
        lambda w: config["annotation_eval"]["gold"][w.lang],
    output:
        train="results/ner/gold/{lang}.train.conll",
        valid="results/ner/gold/{lang}.valid.conll",
    log:
        "logs/annotate/split_gold_{lang}.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    params:
        fraction=config["annotation_eval"]["valid_fraction"],
        seed=config["seed"],
    shell:
        "lem data conll-split --input {input} --valid-fraction {params.fraction} --seed {params.seed} "
        "--out-train {output.train} --out-valid {output.valid} > {log} 2>&1"


rule gold_all:
    input:
        expand("results/ner/gold/{lang}.{{split}}.conll", lang=LANGS),
    output:
        "results/ner/gold/all.{split}.conll",
    log:
        "logs/annotate/gold_all_{split}.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    shell:
        "cat {input} > {output} 2> {log}"


rule gold_text:
    input:
        "results/ner/gold/{lang}.valid.conll",
    output:
        "results/ner/gold/{lang}.valid.txt",
    log:
        "logs/annotate/gold_text_{lang}.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    shell:
        "lem data conll-text --input {input} --out {output} > {log} 2>&1"


rule annotation_eval:
    input:
        text="results/ner/gold/{lang}.valid.txt",
        gold="results/ner/gold/{lang}.valid.conll",
        resources=lambda w: annotation_inputs(
            w.lang, eval_annotation(w.annotator, w.lang)
        ),
    output:
        pred="results/annotation_eval/{annotator}/{lang}.parquet",
        metrics="results/annotation_eval/{annotator}/{lang}.json",
    log:
        "logs/annotate/eval_{annotator}_{lang}.log",
    conda:
        "../../envs/annotate.yaml"
    threads: 1
    params:
        settings=lambda w: as_json(eval_annotation(w.annotator, w.lang)),
    shell:
        "(lem annotate run --lang {wildcards.lang} --input {input.text} --settings '{params.settings}' "
        "--out {output.pred} && lem annotate score --pred {output.pred} --gold {input.gold} "
        "--lang {wildcards.lang} --out {output.metrics}) > {log} 2>&1"
