# Reference encoders (config `reference_encoders`, lem.reference): per row `ref_<name>`, one job for the mining sets and
# one for the curation corpora (RUN.reference_jobs, as the variants' embed jobs), writing every text of
# RUN.embedding_files() at results/embeddings/{variant}/seed{first seed}/{evalset}/{pair}/{lang}.{npy,ids.txt,meta.json}, the layout
# of the variants' and the controls' embeddings, so mining takes them as one more row. A laser row runs in
# envs/laser.yaml (laser-encoders needs Python 3.8; the project is not installed there, so the rule puts the
# repository's src/ on PYTHONPATH and runs `python -m lem`); a sentence_transformers row in the main environment.


for _suffix, _log, _files in RUN.reference_jobs():

    rule:
        name:
            f"embed_reference_laser{_suffix}"
        input:
            sentences=sentence_files(_files),
        output:
            emb=RUN.reference_paths(_files, "npy"),
            ids=RUN.reference_paths(_files, "ids.txt"),
            meta=RUN.reference_paths(_files, "meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{RUN.seeds[0]}/{_log}.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{RUN.seeds[0]}/{_log}.tsv"
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
            files=lambda w, input, output, f=_files: reference_args(f, input, output),
        shell:
            'PYTHONPATH={params.src:q}"${{PYTHONPATH:+:$PYTHONPATH}}" python -m lem reference encode {params.files:q} '
            "--settings '{params.settings}' > {log:q} 2>&1"

    rule:
        name:
            f"embed_reference{_suffix}"
        input:
            sentences=sentence_files(_files),
        output:
            emb=RUN.reference_paths(_files, "npy"),
            ids=RUN.reference_paths(_files, "ids.txt"),
            meta=RUN.reference_paths(_files, "meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{RUN.seeds[0]}/{_log}.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{RUN.seeds[0]}/{_log}.tsv"
        wildcard_constraints:
            variant=RUN.reference_rows("sentence_transformers"),
        conda:
            "../../envs/train.yaml"
        threads: 1
        params:
            settings=lambda w: as_json(
                RUN.settings_for("embed_reference", variant=w.variant)
            ),
            files=lambda w, input, output, f=_files: reference_args(f, input, output),
        shell:
            "lem reference encode {params.files:q} --settings '{params.settings}' > {log:q} 2>&1"
