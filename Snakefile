# nodedp: one DAG from graphs to paper tables and figures.
# Slices: `snakemake demo`, `snakemake runs`, `snakemake paper`, `snakemake data`;
# one dataset of a study: `snakemake results/summary/main/runs/<dataset>.parquet`.
from snakemake.utils import min_version

min_version("8.20")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/structure.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/paper.smk"


rule all:
    default_target: True
    input:
        [paper_targets(study) for study in STUDIES],


rule demo:
    input:
        demo_targets,


rule data:
    input:
        data_targets(),


rule runs:
    input:
        [run_targets(study) for study in STUDIES],


rule paper:
    input:
        [paper_targets(study) for study in STUDIES],
