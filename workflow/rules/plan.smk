# `snakemake results/plan.txt`: what the training jobs of this config cost (steps, evaluations, disk,
# GPU-hours), counted from the run's files where they exist. Not part of `all`; nothing trains.


rule plan:
    output:
        txt=artifact(paths.PLAN, ext="txt"),
        tsv=artifact(paths.PLAN, ext="tsv"),
        json=artifact(paths.PLAN, ext="json"),
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
