# One embed job per model: it loads the model once and writes the embeddings of every evaluation file the
# model serves, at results/embeddings/{variant}/{evalset}/{src}-{tgt}/{lang}.{npy,ids.txt,meta.json}.
# A unit `all` is a model that serves every pair (the base model; any variant's trilingual model); in the
# per-pair scope a trained variant has one unit per pair (`si-en`, ...). Adding an evaluation set reruns
# each variant's embed jobs (their outputs change); mining settings never do.


def embed_units():
    """Unit -> (variants, [(evalset, pair, lang), ...]): which files each model writes."""
    files = [
        (e, pair, lang)
        for e, spec in config["mining"].get("evalsets", {}).items()
        for pair in spec["pairs"]
        for lang in src_tgt(pair)
    ]
    if not files:
        return {}
    if config["pretrain"]["scope"] == "tri":
        return {"all": (VARIANTS, files)}
    units = {"all": (["base"], files)} if "base" in VARIANTS else {}
    if TRAINED:
        for pair in dict.fromkeys(p for _, p, _ in files):
            units[pair] = (TRAINED, [f for f in files if f[1] == pair])
    return units


def embed_paths(files, ext):
    return [
        f"results/embeddings/{{variant}}/{e}/{p}/{lang}.{ext}" for e, p, lang in files
    ]


def embed_args(input, output):
    """--sentences S --out E for every file of the job, in the same order (a list: `:q` quotes each)."""
    return [
        arg
        for s, o in zip(input.sentences, output.emb, strict=True)
        for arg in ("--sentences", s, "--out", o)
    ]


for _unit, (_variants, _files) in embed_units().items():

    rule:
        name:
            "embed" if _unit == "all" else f"embed_{_unit.replace('-', '_')}"
        input:
            # model_for (common.smk): every pair of a unit has the same model
            model=lambda w, pair=_files[0][1]: model_for(w.variant, pair),
            sentences=[
                f"results/eval/prepared/{e}/{p}/{lang}.tsv" for e, p, lang in _files
            ],
        output:
            emb=embed_paths(_files, "npy"),
            ids=embed_paths(_files, "ids.txt"),
            meta=embed_paths(_files, "meta.json"),
        log:
            f"logs/embed/{{variant}}/{_unit}.log",
        benchmark:
            f"benchmarks/embed/{{variant}}/{_unit}.tsv"
        wildcard_constraints:
            variant="|".join(_variants),
        conda:
            "../../envs/train.yaml"
        threads: 1
        params:
            settings=as_json(config["embedding"]),
            files=lambda w, input, output: embed_args(input, output),
        shell:
            "lem embed encode --model {input.model:q} {params.files:q} "
            "--settings '{params.settings}' > {log:q} 2>&1"


# The evaluation chain's controls (config `controls`), in the same layout: one job per evaluation set and pair.
rule embed_control:
    input:
        src="results/eval/prepared/{evalset}/{src}-{tgt}/{src}.tsv",
        tgt="results/eval/prepared/{evalset}/{src}-{tgt}/{tgt}.tsv",
        dictionary=lambda w: (
            []
            if w.variant != "control_lexical"
            or control_dictionary(f"{w.src}-{w.tgt}") in (None, "generated")
            else control_dictionary(f"{w.src}-{w.tgt}")
        ),
    output:
        src="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{src}.npy",
        tgt="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{tgt}.npy",
        src_ids="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{src}.ids.txt",
        tgt_ids="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{tgt}.ids.txt",
        src_meta="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{src}.meta.json",
        tgt_meta="results/embeddings/{variant}/{evalset}/{src}-{tgt}/{tgt}.meta.json",
    log:
        "logs/embed/{variant}/{evalset}/{src}-{tgt}.log",
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
            ["--dictionary", control_dictionary(f"{w.src}-{w.tgt}")]
            + (
                []
                if control_dictionary(f"{w.src}-{w.tgt}") == "generated"
                else ["--dict-langs", w.src, w.tgt]
            )
            if w.variant == "control_lexical"
            else []
        ),
        dim=config["controls"]["dim"],
        seed=config["seed"],
    shell:
        "lem embed control --kind {params.kind:q} {params.dictionary:q} --dim {params.dim} --seed {params.seed} "
        "--sentences {input.src:q} --lang {wildcards.src:q} --out {output.src:q} "
        "--sentences {input.tgt:q} --lang {wildcards.tgt:q} --out {output.tgt:q} > {log:q} 2>&1"
