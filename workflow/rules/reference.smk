# Reference encoders (config `reference_encoders`): per row `ref_<name>`, one job per mining set and one for
# the curation corpora (RUN.grid.reference_jobs, as the variants' embed jobs), writing every text of
# RUN.grid.embedding_files() at lem.run.paths.EMBEDDING (seed: the run's first), the layout of the variants' and
# the controls' embeddings, so mining takes them as one more row. A laser row runs the workflow's own script
# workflow/scripts/laser_encode.py in envs/laser.yaml (laser-encoders needs Python 3.8; the script imports no
# module of the package); a sentence_transformers row runs `lem reference encode`.
#
# Two rules per set, `embed_reference_laser_<set>` and `embed_reference_<set>` (as the embed rules'
# `<set>`), whether or not the config has a reference row of that backend. The rules of the shipped configs,
# listed so that `grep "rule <name>"` finds them (tests/unit/test_rule_paths.py):
# rule embed_reference_curation, rule embed_reference_laser_curation,
# rule embed_reference_laser_multiner_test, rule embed_reference_laser_news,
# rule embed_reference_laser_news_army, rule embed_reference_laser_news_gen,
# rule embed_reference_laser_news_hiru, rule embed_reference_laser_news_itn,
# rule embed_reference_laser_news_newsfirst, rule embed_reference_multiner_test, rule embed_reference_news,
# rule embed_reference_news_army, rule embed_reference_news_gen, rule embed_reference_news_hiru,
# rule embed_reference_news_itn, rule embed_reference_news_newsfirst

for _suffix, _log, _files in RUN.grid.reference_jobs():

    rule:
        name:
            f"embed_reference_laser{_suffix}"
        input:
            sentences=sentence_files(_files),
        output:
            emb=RUN.grid.reference_paths(_files, "npy"),
            ids=RUN.grid.reference_paths(_files, "ids.txt"),
            meta=RUN.grid.reference_paths(_files, "meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{RUN.seeds[0]}/{_log}.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{RUN.seeds[0]}/{_log}.tsv"
        wildcard_constraints:
            variant=RUN.grid.reference_rows("laser"),
        conda:
            "../../envs/laser.yaml"
        threads: 1
        params:
            script=workflow_script("laser_encode.py"),
            settings=lambda w: as_json(
                rule_settings.embed_reference(RUN, variant=w.variant)
            ),
            files=lambda w, input, output, f=_files: reference_args(f, input, output),
        shell:
            "python {params.script:q} {params.files:q} --settings '{params.settings}' > {log:q} 2>&1"

    rule:
        name:
            f"embed_reference{_suffix}"
        input:
            sentences=sentence_files(_files),
        output:
            emb=RUN.grid.reference_paths(_files, "npy"),
            ids=RUN.grid.reference_paths(_files, "ids.txt"),
            meta=RUN.grid.reference_paths(_files, "meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{RUN.seeds[0]}/{_log}.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{RUN.seeds[0]}/{_log}.tsv"
        wildcard_constraints:
            variant=RUN.grid.reference_rows("sentence_transformers"),
        conda:
            lem_env("train")
        threads: 1
        params:
            settings=lambda w: as_json(
                rule_settings.embed_reference(RUN, variant=w.variant)
            ),
            files=lambda w, input, output, f=_files: reference_args(f, input, output),
        shell:
            "lem reference encode {params.files:q} --settings '{params.settings}' > {log:q} 2>&1"
