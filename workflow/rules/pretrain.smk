from lem.core.gpu_share import training_resources

if config["tokenizer"]["source"] == "train":

    rule train_tokenizer:
        input:
            mono=expand(paths.GUARDED_MONO, lang=LANGS),
            para=expand(paths.GUARDED_PARA, pair=PAIRS),
        output:
            directory(paths.TOKENIZER),
        log:
            "logs/pretrain/tokenizer.log",
        conda:
            lem_env("train")
        threads: 1
        params:
            vocab=config["tokenizer"]["vocab_size"],
            seed=config["seed"],
        shell:
            "lem tokenizer train --inputs {input.mono:q} {input.para:q} --vocab-size {params.vocab:q} "
            "--seed {params.seed:q} --out {output:q} > {log:q} 2>&1"


rule features_mono:
    input:
        tokenizer=RUN.tokenizer_dir(),
        annotations=paths.ANNOTATION_MONO,
    output:
        directory(paths.FEATURES_MONO),
    log:
        "logs/features/mono_{lang}.log",
    conda:
        lem_env("train")
    threads: 1
    params:
        max_length=config["pretrain"]["max_length"],
        valid=config["pretrain"]["valid_fraction"],
        seed=config["seed"],
    shell:
        "lem features mono --tokenizer {input.tokenizer:q} --annotations {input.annotations:q} "
        "--lang {wildcards.lang} --max-length {params.max_length:q} --valid-fraction {params.valid:q} "
        "--seed {params.seed:q} --out {output:q} > {log:q} 2>&1"


rule features_para:
    input:
        tokenizer=RUN.tokenizer_dir(),
        train_src=artifact(
            paths.ANNOTATION_PARA, pair="{src}-{tgt}", split="train", lang="{src}"
        ),
        train_tgt=artifact(
            paths.ANNOTATION_PARA, pair="{src}-{tgt}", split="train", lang="{tgt}"
        ),
        valid_src=artifact(
            paths.ANNOTATION_PARA, pair="{src}-{tgt}", split="valid", lang="{src}"
        ),
        valid_tgt=artifact(
            paths.ANNOTATION_PARA, pair="{src}-{tgt}", split="valid", lang="{tgt}"
        ),
    output:
        directory(artifact(paths.FEATURES_PARA, pair="{src}-{tgt}")),
    log:
        "logs/features/para_{src}-{tgt}.log",
    conda:
        lem_env("train")
    threads: 1
    params:
        max_length=config["pretrain"]["max_length"],
    shell:
        "lem features para --tokenizer {input.tokenizer:q} --pair {wildcards.src}-{wildcards.tgt} "
        "--train-src {input.train_src:q} --train-tgt {input.train_tgt:q} "
        "--valid-src {input.valid_src:q} --valid-tgt {input.valid_tgt:q} "
        "--max-length {params.max_length:q} --out {output:q} > {log:q} 2>&1"


if config["base_model"]["source"] == "scratch":

    rule pretrain_base:
        input:
            tokenizer=RUN.tokenizer_dir(),
            features=expand(paths.FEATURES_MONO, lang=LANGS),
            coverage=ancient(COVERAGE),
        output:
            directory(paths.BASE_MODEL),
        log:
            "logs/pretrain/base/seed{seed}.log",
        benchmark:
            "benchmarks/pretrain/base/seed{seed}.tsv"
        conda:
            lem_env("train")
        threads: training_threads()
        resources:
            **training_resources(config["resources"]),  # lem.core.gpu_share: a GPU, or a share of one
        params:
            settings=lambda w: as_json(rule_settings.pretrain_base(RUN, seed=w.seed)),
            checkpoints=paths.BASE_CHECKPOINTS,
            # not in the command: a change of the code that trains retrains (lem.run.training_code)
            training_code=training_code(),
        shell:
            "lem pretrain base --tokenizer {input.tokenizer:q} --features {input.features:q} "
            "--settings '{params.settings}' --checkpoints {params.checkpoints:q} "
            "--threads {threads} --out {output:q} > {log:q} 2>&1"


if config["base_model"]["source"] == "stand_in":

    # A randomly initialised XLM-R-architecture model + tokenizer in place of the hub model, for smoke
    # tests of the paper-shaped DAG (config/gpu-smoke.yaml); its tokenizer is trained on the run's text
    # unless the config trains one (tokenizer.source: train).
    rule stand_in_model:
        input:
            tokenizer=(
                RUN.tokenizer_dir() if config["tokenizer"]["source"] == "train" else []
            ),
            texts=(
                []
                if config["tokenizer"]["source"] == "train"
                else expand(paths.GUARDED_MONO, lang=LANGS)
                + expand(paths.GUARDED_PARA, pair=PAIRS)
            ),
        output:
            directory(RUN.base_model_dir()),
        log:
            "logs/pretrain/stand_in.log",
        conda:
            lem_env("train")
        threads: 1
        params:
            size=config["base_model"]["stand_in"]["size"],
            vocab=config["base_model"]["stand_in"]["vocab_size"],
            seed=config["seed"],
        shell:
            "lem stand-in build --size {params.size:q} "
            + (
                "--tokenizer {input.tokenizer:q}"
                if config["tokenizer"]["source"] == "train"
                else "--texts {input.texts:q} --vocab-size {params.vocab:q}"
            )
            + " --seed {params.seed:q} --out {output:q} > {log:q} 2>&1"


rule pretrain_mono:
    input:
        init=lambda w: RUN.base_model_dir(w.seed),
        features=lambda w: expand(paths.FEATURES_MONO, lang=RUN.scope_langs(w.scope)),
        # The annotation coverage check gates training (a zero share of a masked entity type fails
        # there, before GPU hours are spent); ancient: rerunning the check alone retrains nothing.
        coverage=ancient(COVERAGE),
        # so does the check of the settings against a hub model fetched by this run
        model_check=base_model_checked(),
    output:
        directory(artifact(paths.MODEL, variant="{tvariant}", stage="mono")),
    log:
        "logs/pretrain/{tvariant}/{scope}/seed{seed}/mono.log",
    benchmark:
        "benchmarks/pretrain/{tvariant}/{scope}/seed{seed}/mono.tsv"
    conda:
        lem_env("train")
    threads: training_threads()
    resources:
        **training_resources(config["resources"]),  # lem.core.gpu_share: a GPU, or a share of one
    params:
        settings=lambda w: as_json(
            rule_settings.pretrain_mono(
                RUN, scope=w.scope, tvariant=w.tvariant, seed=w.seed
            )
        ),
        checkpoints=artifact(paths.CHECKPOINTS, variant="{tvariant}", stage="mono"),
        # not in the command: a change of the code that trains retrains (lem.run.training_code)
        training_code=training_code(),
    shell:
        "lem pretrain continue --stage mono --init {input.init:q} --features {input.features:q} "
        "--settings '{params.settings}' --checkpoints {params.checkpoints:q} "
        "--threads {threads} --out {output:q} > {log:q} 2>&1"


rule pretrain_para:
    input:
        init=artifact(paths.MODEL, variant="{tvariant}", stage="mono"),
        features=lambda w: expand(paths.FEATURES_PARA, pair=RUN.scope_pairs(w.scope)),
    output:
        directory(artifact(paths.MODEL, variant="{tvariant}", stage="para")),
    log:
        "logs/pretrain/{tvariant}/{scope}/seed{seed}/para.log",
    benchmark:
        "benchmarks/pretrain/{tvariant}/{scope}/seed{seed}/para.tsv"
    conda:
        lem_env("train")
    threads: training_threads()
    resources:
        **training_resources(config["resources"]),  # lem.core.gpu_share: a GPU, or a share of one
    params:
        settings=lambda w: as_json(
            rule_settings.pretrain_para(
                RUN, scope=w.scope, tvariant=w.tvariant, seed=w.seed
            )
        ),
        checkpoints=artifact(paths.CHECKPOINTS, variant="{tvariant}", stage="para"),
        # not in the command: a change of the code that trains retrains (lem.run.training_code)
        training_code=training_code(),
    shell:
        "lem pretrain continue --stage para --init {input.init:q} --features {input.features:q} "
        "--settings '{params.settings}' --checkpoints {params.checkpoints:q} "
        "--threads {threads} --out {output:q} > {log:q} 2>&1"
