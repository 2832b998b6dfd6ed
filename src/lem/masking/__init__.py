"""Stage `lem masking` (workflow: pretrain.smk): LEM and standard masking of training batches and
of the fixed validation set (`collate`), and the masking statistics of a collator (`cli`)."""
