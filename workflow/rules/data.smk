# Data stage: canonical graphs (generated from code, or downloaded) and stored splits.


rule graph:
    output:
        graph="resources/graphs/{dataset}/graph.pt",
        meta="resources/graphs/{dataset}/meta.json",
    log:
        "logs/graph/{dataset}.log",
    benchmark:
        "benchmarks/graph/{dataset}.tsv"
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp graph --dataset {wildcards.dataset}"
        " --out resources/graphs/{wildcards.dataset} > {log} 2>&1"


rule split:
    input:
        meta="resources/graphs/{dataset}/meta.json",
    output:
        "results/splits/{dataset}/{setting}/seed~{seed}.pt",
    log:
        "logs/split/{dataset}/{setting}/seed~{seed}.log",
    params:
        fractions=f"{config['splits']['train']} {config['splits']['val']} {config['splits']['test']}",
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp split --graph resources/graphs/{wildcards.dataset}"
        " --setting {wildcards.setting} --seed {wildcards.seed}"
        " --fractions {params.fractions} --out {output} > {log} 2>&1"
