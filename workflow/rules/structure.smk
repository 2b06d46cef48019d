# DP structure stage: degree bounding (public bounds enforced by sampling edges).
# Later methods add their artifacts here (noisy PPR matrices, cached aggregations).


rule bound_degree:
    input:
        meta="resources/graphs/{dataset}/meta.json",
        split="results/splits/{dataset}/{setting}/seed~{seed}.pt",
    output:
        "results/structure/{dataset}/{setting}/seed~{seed}/{kind}~{bound}.pt",
    wildcard_constraints:
        kind="in-degree|out-degree",
        bound=r"\d+",
    log:
        "logs/structure/{dataset}/{setting}/seed~{seed}/{kind}~{bound}.log",
    benchmark:
        "benchmarks/structure/{dataset}/{setting}/seed~{seed}/{kind}~{bound}.tsv"
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp bound-degree --graph resources/graphs/{wildcards.dataset}"
        " --split {input.split} --kind {wildcards.kind} --bound {wildcards.bound}"
        " --seed {wildcards.seed} --out {output} > {log} 2>&1"
