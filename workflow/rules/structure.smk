# DP structure stage: degree bounding (public bounds enforced by sampling edges) and
# DPAR's DP-APPR matrices (each with its own ledger, shared by the runs that use it).


rule bound_degree:
    input:
        meta="resources/graphs/{dataset}/meta.json",
        split="results/splits/{dataset}/{setting}/seed~{seed}.pt",
    output:
        "results/structure/{dataset}/{setting}/seed~{seed}/{kind}~{bound}.pt",
    log:
        "logs/structure/{dataset}/{setting}/seed~{seed}/{kind}~{bound}.log",
    benchmark:
        "benchmarks/structure/{dataset}/{setting}/seed~{seed}/{kind}~{bound}.tsv"
    wildcard_constraints:
        kind="in-degree|out-degree|degree",
        bound=r"\d+",
    conda:
        "../../envs/nodedp.yaml"
    resources:
        **job_resources("structure"),
    shell:
        "python -m nodedp bound-degree --graph resources/graphs/{wildcards.dataset}"
        " --split {input.split} --kind {wildcards.kind} --bound {wildcards.bound}"
        " --seed {wildcards.seed} --out {output} > {log} 2>&1"


rule dp_appr:
    input:
        graph="resources/graphs/{dataset}/graph.pt",
        meta="resources/graphs/{dataset}/meta.json",
        split="results/splits/{dataset}/{setting}/seed~{seed}.pt",
    output:
        artifact="results/structure/{dataset}/{setting}/seed~{seed}/dp-appr/{key}/eps~{eps}.pt",
        ledger="results/structure/{dataset}/{setting}/seed~{seed}/dp-appr/{key}/eps~{eps}.ledger.json",
    log:
        "logs/structure/{dataset}/{setting}/seed~{seed}/dp-appr/{key}/eps~{eps}.log",
    benchmark:
        "benchmarks/structure/{dataset}/{setting}/seed~{seed}/dp-appr/{key}/eps~{eps}.tsv"
    wildcard_constraints:
        key="|".join(DP_APPR) or "no-dpar-method-configured",
    conda:
        "../../envs/nodedp.yaml"
    threads: 1
    resources:
        **job_resources("structure"),
    params:
        method=dp_appr_method,
        hparams=dp_appr_hparams,
        delta=config["privacy"]["delta"],
        accountant=config["privacy"]["accountant"],
    shell:
        "python -m nodedp dp-appr --graph resources/graphs/{wildcards.dataset} --split {input.split}"
        " --method {params.method} --hparams {params.hparams:q} --epsilon {wildcards.eps}"
        " --delta {params.delta} --accountant {params.accountant} --seed {wildcards.seed}"
        " --out {output.artifact} > {log} 2>&1"
