# Training stage: one cell of the grid (dataset, method, ε, seed) per job; on a cluster,
# cells are submitted in group jobs (`group: train`, the profile's `group-components`).


rule train:
    input:
        graph="resources/graphs/{dataset}/graph.pt",
        meta="resources/graphs/{dataset}/meta.json",
        split=train_split_input,
        structure=train_structure_inputs,
    output:
        metrics="results/runs/{dataset}/{method}/eps~{eps}/seed~{seed}/metrics.json",
        ledger="results/runs/{dataset}/{method}/eps~{eps}/seed~{seed}/ledger.json",
    log:
        "logs/train/{dataset}/{method}/eps~{eps}/seed~{seed}.log",
    benchmark:
        "benchmarks/train/{dataset}/{method}/eps~{eps}/seed~{seed}.tsv"
    params:
        base=method_base,
        hparams=method_hparams,
        delta=config["privacy"]["delta"],
        accountant=config["privacy"]["accountant"],
    threads: 1
    resources:
        mem_mb=train_mem_mb,
        runtime=train_runtime,
        gres=train_gres,
    group:
        "train"
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp train --graph resources/graphs/{wildcards.dataset}"
        " --split {input.split} --structure {input.structure}"
        " --method {params.base} --name {wildcards.method} --epsilon {wildcards.eps} --seed {wildcards.seed}"
        " --hparams {params.hparams:q} --delta {params.delta} --accountant {params.accountant}"
        " --threads {threads} --out results/runs/{wildcards.dataset}/{wildcards.method}/eps~{wildcards.eps}/seed~{wildcards.seed}"
        " > {log} 2>&1"
