from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/annotate.smk"
include: "workflow/rules/pretrain.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/mine.smk"
include: "workflow/rules/curate.smk"
include: "workflow/rules/sentiment.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
