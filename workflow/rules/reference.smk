# Reference encoders (config `reference_encoders`, lem.refenc): one job per row `ref_<name>`, writing every text of
# RUN.embedding_files() at results/embeddings/{variant}/seed{first seed}/{evalset}/{pair}/{lang}.{npy,ids.txt,meta.json}, the layout
# of the variants' and the controls' embeddings, so mining takes them as one more row. A laser row runs in
# envs/laser.yaml (laser-encoders needs Python 3.8; the project is not installed there, so the rule puts the
# repository's src/ on PYTHONPATH and runs `python -m lem`); a sentence_transformers row in the main environment.


if RUN.reference_sentences():

    rule embed_reference_laser:
        input:
            sentences=RUN.reference_sentences(),
        output:
            emb=RUN.reference_paths("npy"),
            ids=RUN.reference_paths("ids.txt"),
            meta=RUN.reference_paths("meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{RUN.seeds[0]}/reference.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{RUN.seeds[0]}/reference.tsv"
        wildcard_constraints:
            variant=RUN.reference_rows("laser"),
        conda:
            "../../envs/laser.yaml"
        threads: 1
        params:
            src=str(Path(workflow.basedir) / "src"),
            settings=lambda w: as_json(
                RUN.settings_for("embed_reference", variant=w.variant)
            ),
            files=lambda w, input, output: RUN.reference_args(
                input.sentences, output.emb
            ),
        shell:
            'PYTHONPATH={params.src:q}"${{PYTHONPATH:+:$PYTHONPATH}}" python -m lem reference encode {params.files:q} '
            "--settings '{params.settings}' > {log:q} 2>&1"

    rule embed_reference:
        input:
            sentences=RUN.reference_sentences(),
        output:
            emb=RUN.reference_paths("npy"),
            ids=RUN.reference_paths("ids.txt"),
            meta=RUN.reference_paths("meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{RUN.seeds[0]}/reference.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{RUN.seeds[0]}/reference.tsv"
        wildcard_constraints:
            variant=RUN.reference_rows("sentence_transformers"),
        conda:
            "../../envs/train.yaml"
        threads: 1
        params:
            settings=lambda w: as_json(
                RUN.settings_for("embed_reference", variant=w.variant)
            ),
            files=lambda w, input, output: RUN.reference_args(
                input.sentences, output.emb
            ),
        shell:
            "lem reference encode {params.files:q} --settings '{params.settings}' > {log:q} 2>&1"
