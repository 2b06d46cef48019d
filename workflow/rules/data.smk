# Data stage: downloads (local rules), canonical graphs, stored splits.


rule download:
    output:
        directory("resources/raw/{dataset}"),
    log:
        "logs/download/{dataset}.log",
    # Never Snakemake's retries (the profile's `retries:` included): the download retries what may pass
    # (timeouts, resets, 429, 5xx) with backoff, and a 404 or 403 would only fail the same way again.
    retries: 0
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        mirror=mirror_option,
        # a declared union of Facebook100 schools downloads again when its schools change
        declared=declared_graph,
    shell:
        "python -m nodedp download --dataset {wildcards.dataset} --out {output}"
        " --lock resources/raw/checksums.lock.json {params.mirror} > {log} 2>&1"


rule graph:
    input:
        raw=graph_raw_inputs,
        declared=declared_graph_files,
    output:
        graph="resources/graphs/{dataset}/graph.pt",
        meta="resources/graphs/{dataset}/meta.json",
    log:
        "logs/graph/{dataset}.log",
    benchmark:
        "benchmarks/graph/{dataset}.tsv"
    conda:
        "../../envs/nodedp.yaml"
    resources:
        **job_resources("data"),
    params:
        raw=graph_raw_option,
        declared=declared_graph,
    shell:
        "python -m nodedp graph --dataset {wildcards.dataset} {params.raw}"
        " --out resources/graphs/{wildcards.dataset} > {log} 2>&1"


rule split:
    input:
        meta="resources/graphs/{dataset}/meta.json",
    output:
        "results/splits/{dataset}/{setting}/seed~{seed}.pt",
    log:
        "logs/split/{dataset}/{setting}/seed~{seed}.log",
    conda:
        "../../envs/nodedp.yaml"
    resources:
        **job_resources("data"),
    params:
        limits=split_size_limits,
    shell:
        "python -m nodedp split --graph resources/graphs/{wildcards.dataset}"
        " --setting {wildcards.setting} --seed {wildcards.seed} --check-limits {params.limits:q}"
        " --out {output} > {log} 2>&1"


# How far the graph is from its public degree bounds, and how much one node removal moves each
# bounding when it is re-run (the guarantee's condition; docs/privacy.md, "Degree bounding under node removal").
rule bounding_stability:
    input:
        meta="resources/graphs/{dataset}/meta.json",
        split=stability_split,
    output:
        "resources/graphs/{dataset}/stability.json",
    log:
        "logs/stability/{dataset}.log",
    benchmark:
        "benchmarks/stability/{dataset}.tsv"
    conda:
        "../../envs/nodedp.yaml"
    resources:
        **job_resources("structure"),
    shell:
        "python -m nodedp stability --graph resources/graphs/{wildcards.dataset} --split {input.split}"
        " --out {output} > {log} 2>&1"
