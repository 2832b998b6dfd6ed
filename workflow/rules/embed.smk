# One embed job per model, unit and evaluation set (lem.run.grid.Grid.embed_jobs): it loads the model once and
# writes the embeddings of one mining set's files the model serves (as `leakage_items` left them), or of
# every curation corpus, at lem.run.paths.EMBEDDING ({lang}.npy, .ids.txt and .meta.json per pair; seed: the
# pre-training seed of the model); log logs/embed/{variant}/seed{seed}/<set>/<unit>.log. A unit `all` is a
# model that serves every pair (the base model; any variant's trilingual model); in the per-pair scope a
# trained variant has one unit per pair (`si-en`, ...). Adding or removing a mining set embeds (and mines)
# that set alone: no other set's embeddings, no curation corpus, hence no curation or NMT job; mining
# settings never rerun embedding.
#
# One rule per unit and set, named `embed_<set>` (unit `all`) or `embed_<pair>_<set>` (`_` for any other
# non-word character; `curation` for the curation corpora). The rules of the shipped configs (config/*.yaml,
# .test/config/config.yaml), listed so that `grep "rule <name>"` finds them (tests/unit/test_rule_paths.py):
# rule embed_curation, rule embed_multiner_test, rule embed_news, rule embed_news_army,
# rule embed_news_gen, rule embed_news_hiru, rule embed_news_itn, rule embed_news_newsfirst,
# rule embed_si_en_curation,
# rule embed_si_en_news_army, rule embed_si_en_news_gen, rule embed_si_en_news_hiru,
# rule embed_si_en_news_itn, rule embed_si_en_news_newsfirst, rule embed_si_ta_curation,
# rule embed_si_ta_news_army, rule embed_si_ta_news_gen, rule embed_si_ta_news_hiru,
# rule embed_si_ta_news_itn, rule embed_si_ta_news_newsfirst, rule embed_ta_en_curation,
# rule embed_ta_en_news_army, rule embed_ta_en_news_gen, rule embed_ta_en_news_hiru,
# rule embed_ta_en_news_itn, rule embed_ta_en_news_newsfirst


for _name, _unit, _variants, _files, _seeds in RUN.grid.embed_jobs():

    rule:
        name:
            _name
        input:
            # RUN.model_for (lem.run): every pair of a unit has the same model
            model=lambda w, pair=_files[0][1]: RUN.model_for(w.variant, pair, w.seed),
            sentences=sentence_files(_files),
        output:
            emb=RUN.grid.embed_paths(_files, "npy"),
            ids=RUN.grid.embed_paths(_files, "ids.txt"),
            meta=RUN.grid.embed_paths(_files, "meta.json"),
        log:
            f"logs/embed/{{variant}}/seed{{seed}}/{_unit}.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/seed{{seed}}/{_unit}.tsv"
        wildcard_constraints:
            variant="|".join(_variants),
            seed="|".join(str(s) for s in _seeds),
        conda:
            lem_env("train")
        threads: 1
        params:
            settings=as_json(rule_settings.embed(RUN)),
            files=lambda w, input, output: file_args(input.sentences, output.emb),
        shell:
            "lem embed encode --model {input.model:q} {params.files:q} "
            "--settings '{params.settings}' > {log:q} 2>&1"
