# `snakemake results/plan.txt`: what the training jobs of this config cost (steps, evaluations, disk,
# GPU-hours), counted from the run's files where they exist. Not part of `all`; nothing trains.


rule plan:
    output:
        txt="results/plan.txt",
        tsv="results/plan.tsv",
        json="results/plan.json",
    log:
        "logs/plan.log",
    conda:
        lem_env("core")
    threads: 1
    params:
        config=as_json(config),
    shell:
        "lem plan cost --config-json '{params.config}' "
        "--out {output.txt:q} {output.tsv:q} {output.json:q} > {log:q} 2>&1"
