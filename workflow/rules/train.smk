# Training stage: one job per cell (dataset, method, ε, seed), `python -m nodedp train`, writing the run's
# metrics.json and ledger.json. Every cell is a job of its own, so a grid that grows (seeds, ε values, datasets,
# methods) plans only its new cells, and an interrupted run keeps every cell it finished. The jobs start from the
# warm worker (nodedp.worker, $NODEDP_WORKER set in common.smk): torch and nodedp are imported once per host, not
# once per cell. On a cluster, cells are submitted in group jobs (group `train`: the SLURM profile's `groups` and
# `group-components`).


rule train:
    input:
        graph="resources/graphs/{dataset}/graph.pt",
        meta="resources/graphs/{dataset}/meta.json",
        split=cell_split,
        structure=cell_structure_input,
    output:
        metrics="results/runs/{dataset}/{method}/eps~{eps}/seed~{seed}/metrics.json",
        ledger="results/runs/{dataset}/{method}/eps~{eps}/seed~{seed}/ledger.json",
    log:
        "logs/train/{dataset}/{method}/eps~{eps}/seed~{seed}.log",
    benchmark:
        "benchmarks/train/{dataset}/{method}/eps~{eps}/seed~{seed}.tsv"
    conda:
        "../../envs/nodedp.yaml"
    threads: 1
    resources:
        **job_resources("train"),
    params:
        base=method_base,
        hparams=method_hparams,
        delta=config["privacy"]["delta"],
        accountant=config["privacy"]["accountant"],
    shell:
        "python -m nodedp train --graph resources/graphs/{wildcards.dataset} --split {input.split}"
        " --structure {input.structure} --method {params.base} --name {wildcards.method:q}"
        " --hparams {params.hparams:q} --epsilon {wildcards.eps} --seed {wildcards.seed} --delta {params.delta}"
        " --accountant {params.accountant} --threads {threads}"
        " --out results/runs/{wildcards.dataset}/{wildcards.method:q}/eps~{wildcards.eps}/seed~{wildcards.seed}"
        " > {log} 2>&1"
