"""Stage `lem nmt` (workflow/rules/nmt.smk): NMT for the parallel data curation task. Train on the
top-ranked share of a curated corpus (`lem.curate.select_top`), translate a held-out test set, score BLEU and
chrF with sacrebleu, and compare variants with sacrebleu's paired bootstrap.

Two backends, one recipe for every variant and kept share:
- `scratch` (the embedded default): a joint SentencePiece-style Unigram tokenizer trained on the training
  pairs (`lem.tokenizer`, XLM-R conventions) and a small Transformer encoder-decoder (`MarianMTModel`,
  sinusoidal positions, shared embeddings) from random weights seeded by `seed`; on the CPU in minutes.
- `pretrained` (the paper config): fine-tuning a multilingual seq2seq model with language codes
  (NLLB-200 `eng_Latn`/`sin_Sinh`/`tam_Taml`, or mBART-50 `en_XX`/`si_LK`/`ta_IN`), from a local folder or
  from the hub at a pinned commit (`revision`: 40 hex digits; a branch such as `main` only with
  `allow_unpinned`), `trust_remote_code` off unless the config says so.

Both train with the project's Trainer (`lem.core.training.make_trainer`: device, precision, threads and
seeds), pick the checkpoint with the lowest validation loss (label-smoothed, as trained) among the
evaluations of `lem.core.training.training_schedule`, and save safetensors with
`lem.core.training.save_model_dir` plus `nmt.json` (backend, languages, language codes) and
`train_log.jsonl` (the Trainer's loss log).

Modules:
- `settings`: `NMTSettings`, language codes, backends;
- `data`: training, validation and test pairs: `src<TAB>tgt` TSV (a header `src<TAB>tgt[<TAB>label]`
  optional), or for the test set two line-aligned files (FLoRes-200: `devtest/sin_Sinh.devtest`;
  `flores_files`);
- `train`: the seq2seq collator and the two backends;
- `translate`: decoding, BLEU / chrF with their signatures, the paired bootstrap;
- `bleu`: per-sentence BLEU sufficient statistics and corpus BLEU from their sums (sacrebleu's, vectorised),
  so that comparisons resample test sentences;
- `cli`: a run (`run_nmt`) writes one folder, atomically: `model/`, `hypotheses.txt`, `references.txt`,
  `metrics.json` (BLEU, chrF, their sacrebleu signatures, counts, settings, `keys`, and `items`: per test
  sentence, BLEU's sufficient statistics); `compare_runs`; the
  stage's verbs.
"""
