if config["corpus"]["source"] == "generate":

    rule generate_corpus:
        output:
            mono=expand(paths.CORPUS_MONO, lang=LANGS),
            para=expand(paths.CORPUS_PARA, pair=PAIRS, split=["train", "valid"]),
            gold=expand(paths.CORPUS_GOLD, lang=LANGS),
            lexicon=expand(paths.CORPUS_LEXICON, lang=LANGS, kind=["pos", "ner"]),
            news=directory(paths.GENERATED_NEWS),
            sentiment=paths.GENERATED_SENTIMENT,
            noisy=expand(paths.GENERATED_NOISY, pair=PAIRS),
            nmt=expand(paths.GENERATED_NMT, pair=PAIRS, split=["valid", "test"]),
        log:
            "logs/corpus/generate.log",
        conda:
            lem_env("core")
        threads: 1
        params:
            settings=as_json(rule_settings.generate_corpus(RUN)),
        shell:
            "lem corpus generate --settings '{params.settings}' "
            f"--out-dir {paths.CORPUS_DIR} --eval-dir {paths.GENERATED_EVAL_DIR} "
            "> {log:q} 2>&1"

else:

    rule mono_from_files:
        input:
            lambda w: config["corpus"]["files"]["mono"][w.lang],
        output:
            paths.CORPUS_MONO,
        log:
            "logs/corpus/mono_{lang}.log",
        conda:
            lem_env("core")
        threads: 1
        shell:
            "lem data mono --input {input:q} --out {output:q} > {log:q} 2>&1"

    rule para_from_files:
        input:
            train=lambda w: RUN.sets.para_files(w.pair, "train"),
            valid=lambda w: RUN.sets.para_files(w.pair, "valid"),
        output:
            train=paths.CORPUS_PARA_TRAIN,
            valid=paths.PARA_VALID,
            stats=paths.PARA_STATS,
        log:
            "logs/corpus/para_{pair}.log",
        conda:
            lem_env("core")
        threads: 1
        params:
            valid_size=lambda w: config["corpus"]["files"]["para"][w.pair].get(
                "valid_size", 0
            ),
            seed=config["seed"],
        shell:
            "lem data pairs --inputs {input.train:q} --valid-input {input.valid:q} "
            "--valid-size {params.valid_size:q} --seed {params.seed:q} "
            "--out-train {output.train:q} --out-valid {output.valid:q} --stats {output.stats:q} > {log:q} 2>&1"


rule prepare_news:
    input:
        lambda w: news_inputs(
            config["mining"]["evalsets"][w.evalset], f"{w.src}-{w.tgt}"
        ),
    output:
        src=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="{src}.tsv"),
        tgt=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="{tgt}.tsv"),
        gold=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="gold.tsv"),
        stats=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="stats.json"),
    log:
        "logs/eval/prepare_{evalset}_{src}-{tgt}.log",
    wildcard_constraints:
        evalset=names_regex(RUN.sets.mining_sets("news")),
    conda:
        lem_env("core")
    threads: 1
    params:
        root=lambda w: source_file(config["mining"]["evalsets"][w.evalset]["root"]),
        site=lambda w: config["mining"]["evalsets"][w.evalset]["site"],
        doc_pairs=lambda w: config["mining"]["evalsets"][w.evalset].get(
            "doc_pairs", "gold"
        ),
        repairs=lambda w: config["mining"]["evalsets"][w.evalset].get(
            "gold_repairs", []
        ),
    shell:
        "lem data news --root {params.root:q} --site {params.site:q} --pair {wildcards.src}-{wildcards.tgt} "
        '--doc-pairs {params.doc_pairs:q} --gold-repairs {params.repairs:q} --out-dir "$(dirname {output.gold:q})" > {log:q} 2>&1'


# A line-aligned test set (mining.evalsets.<name>.format: parallel): each sentence's translation retrieved
# among all the set's sentences, written in the news layout (lem.data.retrieval).
rule prepare_retrieval:
    input:
        src=lambda w: source_dep(
            RUN.sets.retrieval_files(w.evalset, f"{w.src}-{w.tgt}")[0]
        ),
        tgt=lambda w: source_dep(
            RUN.sets.retrieval_files(w.evalset, f"{w.src}-{w.tgt}")[1]
        ),
    output:
        src=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="{src}.tsv"),
        tgt=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="{tgt}.tsv"),
        gold=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="gold.tsv"),
        stats=artifact(paths.PREPARED_FILE, pair="{src}-{tgt}", name="stats.json"),
    log:
        "logs/eval/prepare_{evalset}_{src}-{tgt}.log",
    wildcard_constraints:
        evalset=names_regex(RUN.sets.mining_sets("parallel")),
    conda:
        lem_env("core")
    threads: 1
    shell:
        "lem data retrieval --src {input.src:q} --tgt {input.tgt:q} --pair {wildcards.src}-{wildcards.tgt} "
        '--out-dir "$(dirname {output.gold:q})" > {log:q} 2>&1'


rule prepare_sentiment:
    input:
        lambda w: source_dep(config["sentiment"]["datasets"][w.dataset]["input"]),
    output:
        train=artifact(paths.PREPARED_SENTIMENT, name="train.tsv"),
        valid=artifact(paths.PREPARED_SENTIMENT, name="valid.tsv"),
        test=artifact(paths.PREPARED_SENTIMENT, name="test.tsv"),
        stats=artifact(paths.PREPARED_SENTIMENT, name="stats.json"),
    log:
        "logs/eval/prepare_sentiment_{dataset}.log",
    conda:
        lem_env("core")
    threads: 1
    params:
        input=lambda w: source_file(config["sentiment"]["datasets"][w.dataset]["input"]),
        settings=lambda w: as_json(
            rule_settings.prepare_sentiment(RUN, dataset=w.dataset)
        ),
    shell:
        "lem data sentiment --input {params.input:q} --settings '{params.settings}' "
        '--out-dir "$(dirname {output.train:q})" > {log:q} 2>&1'


# The pre-training text is guarded against the evaluation sets configured when it is built (RUN.sets.guard_eval_files);
# every evaluation set is then checked against it before it is evaluated, so a set added after pre-training
# reruns no pre-training: a mining set per item (leakage_items, mine.smk: a sentence in the training text is
# dropped and counted), any other set whole (leakage_check: refused by name if it overlaps).
rule leakage_guard:
    input:
        mono=expand(paths.CORPUS_MONO, lang=LANGS),
        para=expand(paths.CORPUS_PARA_TRAIN, pair=PAIRS),
        evals=RUN.sets.guard_eval_files(),
    output:
        mono=expand(paths.GUARDED_MONO, lang=LANGS),
        para=expand(paths.GUARDED_PARA, pair=PAIRS),
        report=LEAKAGE_REPORT,
    log:
        "logs/corpus/leakage.log",
    conda:
        lem_env("core")
    threads: 1
    params:
        settings=as_json(rule_settings.leakage(RUN)),
    shell:
        "lem data leakage --train {input.mono:q} {input.para:q} --eval {input.evals:q} "
        "--out-clean {output.mono:q} {output.para:q} --settings '{params.settings}' "
        "--report {output.report:q} > {log:q} 2>&1"


rule leakage_check:
    input:
        evals=lambda w: RUN.sets.evalset_files(w.kind, w.name),
        train=lambda w: RUN.sets.evalset_train(w.kind, w.name),
        report=LEAKAGE_REPORT,
    output:
        paths.CHECKED,
    log:
        "logs/eval/leakage_check_{kind}_{name}.log",
    wildcard_constraints:
        kind="mining|sentiment|curation|nmt",
    conda:
        lem_env("core")
    threads: 1
    params:
        settings=as_json(rule_settings.leakage(RUN)),
    shell:
        "lem data leakage-check --name {wildcards.kind}/{wildcards.name} --eval {input.evals:q} "
        "--train {input.train:q} --guard-report {input.report:q} --settings '{params.settings}' "
        "--out {output:q} > {log:q} 2>&1"
