from lem.core.gpu_share import training_resources


rule annotate_mono:
    input:
        text=paths.GUARDED_MONO,
        resources=lambda w: RUN.sets.annotation_inputs(w.lang),
    output:
        paths.ANNOTATION_MONO,
    log:
        "logs/annotate/mono_{lang}.log",
    benchmark:
        "benchmarks/annotate/mono_{lang}.tsv"
    conda:
        lem_env("annotate")
    threads: 1
    resources:
        gpu=lambda w: RUN.sets.annotation_gpu(w.lang),
        mem_mb=config["resources"]["mem_mb_annotation"],
        runtime=config["resources"]["runtime_annotation"],
    params:
        settings=lambda w: as_json(rule_settings.annotate(RUN, lang=w.lang)),
    shell:
        "lem annotate run --lang {wildcards.lang} --input {input.text:q} "
        "--settings '{params.settings}' --out {output:q} > {log:q} 2>&1"


rule annotate_para:
    input:
        text=lambda w: RUN.sets.para_text(f"{w.src}-{w.tgt}", w.split),
        resources=lambda w: RUN.sets.annotation_inputs(w.lang),
    output:
        artifact(paths.ANNOTATION_PARA, pair="{src}-{tgt}"),
    log:
        "logs/annotate/para_{src}-{tgt}.{split}.{lang}.log",
    benchmark:
        "benchmarks/annotate/para_{src}-{tgt}.{split}.{lang}.tsv"
    conda:
        lem_env("annotate")
    threads: 1
    resources:
        gpu=lambda w: RUN.sets.annotation_gpu(w.lang),
        mem_mb=config["resources"]["mem_mb_annotation"],
        runtime=config["resources"]["runtime_annotation"],
    params:
        settings=lambda w: as_json(rule_settings.annotate(RUN, lang=w.lang)),
        column=lambda w: 0 if w.lang == w.src else 1,
    shell:
        "lem annotate run --lang {wildcards.lang} --input {input.text:q} --column {params.column:q} "
        "--settings '{params.settings}' --out {output:q} > {log:q} 2>&1"


rule annotation_coverage:
    input:
        texts=expand(paths.GUARDED_MONO, lang=LANGS),
        resources=lambda w: sorted(
            {f for lang in LANGS for f in RUN.sets.annotation_inputs(lang)}
        ),
    output:
        COVERAGE,
    log:
        "logs/annotate/coverage.log",
    benchmark:
        "benchmarks/annotate/coverage.tsv"
    conda:
        lem_env("annotate")
    threads: 1
    resources:
        gpu=lambda w: max(RUN.sets.annotation_gpu(lang) for lang in LANGS),
        mem_mb=config["resources"]["mem_mb_annotation"],
        runtime=config["resources"]["runtime_annotation"],
    params:
        langs=LANGS,
        settings=as_json(rule_settings.annotation_coverage(RUN)),
        types=RUN.sets.masked_types(),  # the types alone: a variant removed reruns no annotation
        check=as_json(rule_settings.annotation_coverage_check(RUN)),
    shell:
        "lem annotate coverage --langs {params.langs:q} --texts {input.texts:q} "
        "--settings '{params.settings}' --types {params.types:q} --check '{params.check}' "
        "--out {output:q} > {log:q} 2>&1"


rule train_crf:
    input:
        lambda w: source_dep(config["crf_models"][w.crf]["train"]),
    output:
        model=paths.CRF_MODEL,
        meta=paths.CRF_META,
    log:
        "logs/annotate/train_crf_{crf}.log",
    benchmark:
        "benchmarks/annotate/train_crf_{crf}.tsv"
    wildcard_constraints:
        crf="|".join(config["crf_models"]) or "none",
    conda:
        lem_env("annotate")
    threads: 1
    resources:
        mem_mb=config["resources"]["mem_mb_annotation"],
        runtime=config["resources"]["runtime_annotation"],
    params:
        train=lambda w: source_file(config["crf_models"][w.crf]["train"]),
        args=lambda w: RUN.sets.crf_args(w.crf),
    shell:
        "lem annotate train-crf --train {params.train:q} {params.args:q} --out {output.model:q} > {log:q} 2>&1"


rule train_ner:
    input:
        base=lambda w: RUN.ner_base_model(),
        model_check=base_model_checked(),
        train=lambda w: config["ner_model"]["train"],
        valid=lambda w: config["ner_model"].get("valid", []),
    output:
        directory(paths.NER_MODEL),
    log:
        "logs/annotate/train_ner.log",
    benchmark:
        "benchmarks/annotate/train_ner.tsv"
    conda:
        lem_env("annotate")
    threads: training_threads()
    resources:
        **training_resources(config["resources"]),  # lem.core.gpu_share: a GPU, or a share of one
    params:
        settings=lambda w: as_json(rule_settings.train_ner(RUN)),
        valid=lambda w: (
            ["--valid", config["ner_model"]["valid"]]
            if config["ner_model"].get("valid")
            else []
        ),
    shell:
        "lem annotate train-ner --base-model {input.base:q} --train {input.train:q} {params.valid:q} "
        "--settings '{params.settings}' --out {output:q} > {log:q} 2>&1"


rule split_gold:
    input:
        lambda w: config["annotation_eval"]["gold"][w.lang],
    output:
        train=artifact(paths.NER_GOLD, split="train"),
        valid=artifact(paths.NER_GOLD, split="valid"),
    log:
        "logs/annotate/split_gold_{lang}.log",
    conda:
        lem_env("core")
    threads: 1
    params:
        fraction=config["annotation_eval"]["valid_fraction"],
        seed=config["seed"],
    shell:
        "lem data conll-split --input {input:q} --valid-fraction {params.fraction:q} --seed {params.seed:q} "
        "--out-train {output.train:q} --out-valid {output.valid:q} > {log:q} 2>&1"


rule gold_all:
    input:
        expand(paths.NER_GOLD, lang=LANGS, allow_missing=True),
    output:
        artifact(paths.NER_GOLD, lang="all"),
    log:
        "logs/annotate/gold_all_{split}.log",
    conda:
        lem_env("core")
    threads: 1
    shell:
        "cat {input:q} > {output:q} 2> {log:q}"


rule gold_text:
    input:
        artifact(paths.NER_GOLD, split="valid"),
    output:
        paths.NER_GOLD_TEXT,
    log:
        "logs/annotate/gold_text_{lang}.log",
    conda:
        lem_env("core")
    threads: 1
    shell:
        "lem data conll-text --input {input:q} --out {output:q} > {log:q} 2>&1"


rule annotation_eval:
    input:
        text=paths.NER_GOLD_TEXT,
        gold=artifact(paths.NER_GOLD, split="valid"),
        resources=lambda w: RUN.sets.annotation_inputs(
            w.lang, rule_settings.annotation_eval(RUN, w.annotator, w.lang)
        ),
    output:
        pred=artifact(paths.ANNOTATION_EVAL, ext="parquet"),
        metrics=artifact(paths.ANNOTATION_EVAL, ext="json"),
    log:
        "logs/annotate/eval_{annotator}_{lang}.log",
    conda:
        lem_env("annotate")
    threads: 1
    resources:
        gpu=lambda w: RUN.sets.annotation_gpu(
            w.lang, rule_settings.annotation_eval(RUN, w.annotator, w.lang)
        ),
        mem_mb=config["resources"]["mem_mb_annotation"],
        runtime=config["resources"]["runtime_annotation"],
    params:
        settings=lambda w: as_json(
            rule_settings.annotation_eval(RUN, annotator=w.annotator, lang=w.lang)
        ),
        keys_json=lambda w: metrics_keys("annotation", dataset=w.annotator, pair=w.lang),
    shell:
        "(lem annotate run --lang {wildcards.lang} --input {input.text:q} --settings '{params.settings}' "
        "--out {output.pred:q} && lem annotate score --pred {output.pred:q} --gold {input.gold:q} "
        "--lang {wildcards.lang} --keys '{params.keys_json}' --out {output.metrics:q}) > {log:q} 2>&1"
