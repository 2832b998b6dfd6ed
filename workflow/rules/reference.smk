# Reference encoders (config `reference_encoders`, lem.refenc): one job per row `ref_<name>`, writing every text of
# embedding_files() at results/embeddings/{variant}/seed{first seed}/{evalset}/{pair}/{lang}.{npy,ids.txt,meta.json}, the layout
# of the variants' and the controls' embeddings, so mining takes them as one more row. A laser row runs in
# envs/laser.yaml (laser-encoders needs Python 3.8; the project is not installed there, so the rule puts the
# repository's src/ on PYTHONPATH and runs `python -m lem`); a sentence_transformers row in the main environment.


if REFERENCE_SENTENCES:

    rule embed_reference_laser:
        input:
            sentences=REFERENCE_SENTENCES,
        output:
            emb=reference_paths("npy"),
            ids=reference_paths("ids.txt"),
            meta=reference_paths("meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{PSEEDS[0]}/reference.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{PSEEDS[0]}/reference.tsv"
        wildcard_constraints:
            variant=reference_rows("laser"),
        conda:
            "../../envs/laser.yaml"
        threads: 1
        params:
            src=str(Path(workflow.basedir) / "src"),
            settings=lambda w: reference_settings(w.variant),
            files=lambda w, input, output: reference_args(input, output),
        shell:
            'PYTHONPATH={params.src:q}"${{PYTHONPATH:+:$PYTHONPATH}}" python -m lem reference encode {params.files:q} '
            "--settings '{params.settings}' > {log:q} 2>&1"

    rule embed_reference:
        input:
            sentences=REFERENCE_SENTENCES,
        output:
            emb=reference_paths("npy"),
            ids=reference_paths("ids.txt"),
            meta=reference_paths("meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{PSEEDS[0]}/reference.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{PSEEDS[0]}/reference.tsv"
        wildcard_constraints:
            variant=reference_rows("sentence_transformers"),
        conda:
            "../../envs/train.yaml"
        threads: 1
        params:
            settings=lambda w: reference_settings(w.variant),
            files=lambda w, input, output: reference_args(input, output),
        shell:
            "lem reference encode {params.files:q} --settings '{params.settings}' > {log:q} 2>&1"
