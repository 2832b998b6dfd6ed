rule report:
    input:
        mining=RUN.grid.mining_outputs(),
        sentiment=RUN.grid.sentiment_outputs(),
        curation=RUN.grid.curation_outputs(),
        nmt=RUN.grid.nmt_outputs(),
        annotation=RUN.sets.annotation_eval_outputs(),
        coverage=COVERAGE,
        para_stats=(
            expand(paths.PARA_STATS, pair=PAIRS)
            if config["corpus"]["source"] == "files"
            else []
        ),
        news_stats=[
            artifact(paths.CLEAN, evalset=e, pair=p, name="stats.json")
            for e, spec in config["mining"]["evalsets"].items()
            for p in spec["pairs"]
        ],
        models=[spec.split("=", 1)[1] for spec in RUN.grid.report_models()],
    output:
        tsv=report(
            paths.REPORT["tsv"],
            caption="../report/summary.rst",
            category="1. Results",
            labels={"what": "summary table (long format)"},
        ),
        md=paths.REPORT["md"],
        html=report(
            paths.REPORT["html"],
            caption="../report/tables.rst",
            category="1. Results",
            labels={"what": "tables, intervals, chance, controls, significance"},
        ),
        comparisons=report(
            paths.REPORT["comparisons"],
            caption="../report/comparisons.rst",
            category="1. Results",
            labels={"what": "paired comparisons"},
        ),
        forest=report(
            paths.REPORT["forest"],
            caption="../report/forest.rst",
            category="2. Figures",
            labels={"figure": "declared comparisons (forest)"},
        ),
        png=report(
            paths.REPORT["png"],
            caption="../report/overview.rst",
            category="2. Figures",
            labels={"figure": "overview"},
        ),
        mining=report(
            paths.REPORT["mining"],
            caption="../report/mining.rst",
            category="2. Figures",
            labels={"figure": "mining F1"},
        ),
        masking=report(
            paths.REPORT["masking"],
            caption="../report/masking.rst",
            category="2. Figures",
            labels={"figure": "masking shares"},
        ),
        training=report(
            paths.REPORT["training"],
            caption="../report/training.rst",
            category="2. Figures",
            labels={"figure": "loss curves"},
        ),
        controls=paths.REPORT["controls"],
        archive=paths.REPORT["archive"],
        config=report(
            paths.REPORT["config"],
            caption="../report/config.rst",
            category="3. Configuration",
            labels={"what": "configuration of this run"},
        ),
    log:
        "logs/report/report.log",
    conda:
        lem_env("core")
    threads: 1
    params:
        variants=RUN.rows,
        models=RUN.grid.report_models(),
        settings=as_json(rule_settings.report(RUN)),
        config=as_json(config),
        training_code=training_code(),
    shell:
        "lem report build --mining {input.mining:q} --sentiment {input.sentiment:q} --curation {input.curation:q} --nmt {input.nmt:q} --annotation {input.annotation:q} --news-stats {input.news_stats:q} --para-stats {input.para_stats:q} "
        "--coverage {input.coverage:q} --settings '{params.settings}' "
        "--models {params.models:q} --config '{params.config}' "
        "--variants {params.variants:q} --archive {output.archive:q} --training-code {params.training_code:q} "
        '--out-dir "$(dirname {output.tsv:q})" 2> {log:q}'


# The finished run against the shipped archive of the same configuration (docs/runs/blocks.yaml of the
# checkout the running `lem` comes from): each metric identical, within tolerance or different, each verdict
# agreeing or not; says so when none matches.
rule documented:
    input:
        tsv=paths.REPORT["tsv"],
        comparisons=paths.REPORT["comparisons"],
        config=paths.REPORT["config"],
    output:
        paths.DOCUMENTED,
    log:
        "logs/report/documented.log",
    conda:
        lem_env("core")
    threads: 1
    shell:
        'lem report documented --run "$(dirname {input.tsv:q})" --out {output:q} > {log:q} 2>&1'
