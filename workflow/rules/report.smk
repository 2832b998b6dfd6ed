rule report:
    input:
        mining=mining_outputs(),
        sentiment=sentiment_outputs(),
        curation=curation_outputs(),
        annotation=annotation_eval_outputs(),
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
        variants=VARIANTS,
    shell:
        "lem report --mining {input.mining} --sentiment {input.sentiment} --curation {input.curation} --annotation {input.annotation} "
        "--variants {params.variants} --out-dir $(dirname {output.tsv}) 2> {log}"
