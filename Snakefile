# The rules' entry is workflow/Snakefile (the Snakemake workflow catalog's layout); this file keeps
# `snakemake` in the repository root working as before. It is included as the main Snakefile (its
# `rule all` stays the default target, which a plain `include:` would drop).
workflow.include("workflow/Snakefile", overwrite_default_target=True)
