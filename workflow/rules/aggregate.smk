# Aggregation stage: runs -> per-dataset run tables -> a study summary with bootstrap CIs.


# Its inputs: one metrics.json per training job (all of a job's cells are written and rerun together); it reads
# every run's (params.runs).
rule collect:
    input:
        dataset_run_metrics,
    output:
        "results/summary/{study}/runs/{dataset}.parquet",
    log:
        "logs/collect/{study}/{dataset}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        runs=dataset_run_metrics,
    shell:
        "python -m nodedp collect --out {output} {params.runs} > {log} 2>&1"


rule summarize:
    input:
        study_dataset_tables,
    output:
        "results/summary/{study}/summary.parquet",
    log:
        "logs/summarize/{study}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        resamples=config["bootstrap"]["resamples"],
        confidence=config["bootstrap"]["confidence"],
        seed=config["bootstrap"]["seed"],
    shell:
        "python -m nodedp summarize --resamples {params.resamples}"
        " --confidence {params.confidence} --seed {params.seed}"
        " --out {output} {input} > {log} 2>&1"
