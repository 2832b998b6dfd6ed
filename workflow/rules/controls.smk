# The evaluation chain's controls (config `controls`), in the same layout: one job per evaluation set and pair.
rule embed_control:
    input:
        src=artifact(paths.CLEAN, pair="{src}-{tgt}", name="{src}.tsv"),
        tgt=artifact(paths.CLEAN, pair="{src}-{tgt}", name="{tgt}.tsv"),
        dictionary=lambda w: (
            []
            if w.variant != "control_lexical"
            or RUN.control_dictionary(f"{w.src}-{w.tgt}") in (None, "generated")
            else RUN.control_dictionary(f"{w.src}-{w.tgt}")
        ),
    output:
        src=artifact(paths.EMBEDDING, pair="{src}-{tgt}", lang="{src}", ext="npy"),
        tgt=artifact(paths.EMBEDDING, pair="{src}-{tgt}", lang="{tgt}", ext="npy"),
        src_ids=artifact(
            paths.EMBEDDING, pair="{src}-{tgt}", lang="{src}", ext="ids.txt"
        ),
        tgt_ids=artifact(
            paths.EMBEDDING, pair="{src}-{tgt}", lang="{tgt}", ext="ids.txt"
        ),
        src_meta=artifact(
            paths.EMBEDDING, pair="{src}-{tgt}", lang="{src}", ext="meta.json"
        ),
        tgt_meta=artifact(
            paths.EMBEDDING, pair="{src}-{tgt}", lang="{tgt}", ext="meta.json"
        ),
    log:
        "logs/embed/{variant}/seed{seed}/{evalset}/{src}-{tgt}.log",
    wildcard_constraints:
        variant="control_lexical|control_random",
        src="[a-z]+",
        tgt="[a-z]+",
    conda:
        lem_env("core")
    threads: 1
    params:
        kind=lambda w: w.variant.removeprefix("control_"),
        dictionary=lambda w: (
            ["--dictionary", RUN.control_dictionary(f"{w.src}-{w.tgt}")]
            + (
                RUN.generated_languages_args()
                if RUN.control_dictionary(f"{w.src}-{w.tgt}") == "generated"
                else ["--dict-langs", w.src, w.tgt]
            )
            if w.variant == "control_lexical"
            else []
        ),
        dim=config["controls"]["dim"],
    shell:
        "lem embed control --kind {params.kind:q} {params.dictionary:q} --dim {params.dim} --seed {wildcards.seed} "
        "--sentences {input.src:q} --lang {wildcards.src:q} --out {output.src:q} "
        "--sentences {input.tgt:q} --lang {wildcards.tgt:q} --out {output.tgt:q} > {log:q} 2>&1"


# The run's verdict on its controls: the report is built with a failed control's cells marked "no signal";
# this job then fails naming those cells and the keys that govern them (the run's exit status).
rule controls_gate:
    input:
        paths.REPORT["controls"],
    output:
        paths.CONTROLS_GATE,
    log:
        "logs/report/controls_gate.log",
    conda:
        lem_env("core")
    threads: 1
    shell:
        "lem report controls --verdicts {input:q} --out {output:q} 2>&1 | tee {log:q}"
