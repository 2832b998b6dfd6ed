from lem.core.gpu_share import training_resources


rule sentiment:
    input:
        model=lambda w: RUN.model_for(
            w.variant, config["sentiment"]["datasets"][w.dataset]["pair"], w.seed
        ),
        train=artifact(paths.PREPARED_SENTIMENT, name="train.tsv"),
        valid=artifact(paths.PREPARED_SENTIMENT, name="valid.tsv"),
        test=artifact(paths.PREPARED_SENTIMENT, name="test.tsv"),
        checked=lambda w: RUN.sets.leakage_checked("sentiment", w.dataset),
    output:
        # every fine-tuning seed of one pre-training seed in one job: one interpreter start-up, one encoding
        expand(paths.SENTIMENT, fseed=config["sentiment"]["seeds"], allow_missing=True),
    log:
        "logs/sentiment/{variant}/seed{seed}/{dataset}/finetune.log",
    benchmark:
        "benchmarks/sentiment/{variant}/seed{seed}/{dataset}/finetune.tsv"
    conda:
        lem_env("train")
    threads: 1
    resources:
        **training_resources(config["resources"]),  # lem.core.gpu_share: a GPU, or a share of one
    params:
        settings=as_json(rule_settings.sentiment(RUN)),
        keys_json=lambda w: metrics_keys(
            "sentiment",
            variant=w.variant,
            dataset=w.dataset,
            pair=config["sentiment"]["datasets"][w.dataset]["pair"],
            seed=w.seed,
        ),
        # lem sentiment finetune adds each file's finetune_seed
        fseeds=" ".join(str(f) for f in config["sentiment"]["seeds"]),
    shell:
        "lem sentiment finetune --model {input.model:q} --train {input.train:q} --valid {input.valid:q} "
        "--test {input.test:q} --seed {params.fseeds} --settings '{params.settings}' "
        "--threads {threads} --keys '{params.keys_json}' --out {output:q} > {log:q} 2>&1"
