from snakemake.utils import min_version

min_version("9.0")


# The embedded default, unless a --configfile is given: a given config replaces it whole (a merge would
# leak the default's generated evaluation sets into a paper run).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/annotate.smk"
include: "workflow/rules/pretrain.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/controls.smk"
include: "workflow/rules/reference.smk"
include: "workflow/rules/mine.smk"
include: "workflow/rules/curate.smk"
include: "workflow/rules/nmt.smk"
include: "workflow/rules/sentiment.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/plan.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
