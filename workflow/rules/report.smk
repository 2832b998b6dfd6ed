rule report:
    input:
        mining=mining_outputs(),
        sentiment=sentiment_outputs(),
        curation=curation_outputs(),
    output:
        tsv=report("results/report/summary.tsv", caption="../report/summary.rst", category="Summary"),
        md="results/report/summary.md",
        png=report("results/report/overview.png", caption="../report/overview.rst", category="Summary"),
    log:
        "logs/report/report.log",
    params:
        variants=VARIANTS,
    threads: 1
    conda:
        "../../envs/core.yaml"
    shell:
        "lem report --mining {input.mining} --sentiment {input.sentiment} --curation {input.curation} "
        "--variants {params.variants} --out-dir $(dirname {output.tsv}) 2> {log}"
