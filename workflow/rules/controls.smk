# The evaluation chain's controls (config `controls`), in the same layout: one job per evaluation set and pair.
rule embed_control:
    input:
        src="results/eval/clean/{evalset}/{src}-{tgt}/{src}.tsv",
        tgt="results/eval/clean/{evalset}/{src}-{tgt}/{tgt}.tsv",
        dictionary=lambda w: (
            []
            if w.variant != "control_lexical"
            or RUN.control_dictionary(f"{w.src}-{w.tgt}") in (None, "generated")
            else RUN.control_dictionary(f"{w.src}-{w.tgt}")
        ),
    output:
        src="results/embeddings/{variant}/seed{seed}/{evalset}/{src}-{tgt}/{src}.npy",
        tgt="results/embeddings/{variant}/seed{seed}/{evalset}/{src}-{tgt}/{tgt}.npy",
        src_ids="results/embeddings/{variant}/seed{seed}/{evalset}/{src}-{tgt}/{src}.ids.txt",
        tgt_ids="results/embeddings/{variant}/seed{seed}/{evalset}/{src}-{tgt}/{tgt}.ids.txt",
        src_meta="results/embeddings/{variant}/seed{seed}/{evalset}/{src}-{tgt}/{src}.meta.json",
        tgt_meta="results/embeddings/{variant}/seed{seed}/{evalset}/{src}-{tgt}/{tgt}.meta.json",
    log:
        "logs/embed/{variant}/seed{seed}/{evalset}/{src}-{tgt}.log",
    wildcard_constraints:
        variant="control_lexical|control_random",
        src="[a-z]+",
        tgt="[a-z]+",
    conda:
        "../../envs/core.yaml"
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
        "results/report/controls.json",
    output:
        "results/report/controls_passed.json",
    log:
        "logs/report/controls_gate.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    shell:
        "lem report controls --verdicts {input:q} --out {output:q} 2>&1 | tee {log:q}"
