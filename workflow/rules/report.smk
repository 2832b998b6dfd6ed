rule report:
    input:
        mining=mining_outputs(),
        sentiment=sentiment_outputs(),
        curation=curation_outputs(),
        nmt=nmt_outputs(),
        nmt_compare=nmt_compare_outputs(),
        annotation=annotation_eval_outputs(),
        coverage="results/annotate/coverage.json",
    output:
        tsv=report(
            "results/report/summary.tsv",
            caption="../report/summary.rst",
            category="Summary",
        ),
        md="results/report/summary.md",
        png=report(
            "results/report/overview.png",
            caption="../report/overview.rst",
            category="Summary",
        ),
    log:
        "logs/report/report.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    params:
        variants=ROWS,
        positive_lift=config["controls"]["positive_lift"],
        negative_lift=config["controls"]["negative_lift"],
    shell:
        "lem report build --mining {input.mining:q} --sentiment {input.sentiment:q} --curation {input.curation:q} --nmt {input.nmt:q} --nmt-compare {input.nmt_compare:q} --annotation {input.annotation:q} "
        "--coverage {input.coverage:q} --positive-lift {params.positive_lift} --negative-lift {params.negative_lift} "
        "--variants {params.variants:q} --out-dir $(dirname {output.tsv:q}) 2> {log:q}"
