# Audit stage (`snakemake audit`): an empirical lower bound on ε beside every claimed ε. A study's `audit:` block
# (config.yaml) names the cells; each job plants canary nodes, trains the method once on the graph with the
# included canaries, bounds ε from below at the claimed δ (one-run audit) and runs a TSTF membership-inference
# attack (two more trainings). The report pools every seed's canaries of a cell into one bound.


# One job per audited cell (`python -m nodedp audit`), as training has; on a cluster, audited cells are submitted in
# group jobs (group `audit`: the SLURM profile's `groups` and `group-components`).
rule audit_cell:
    input:
        graph="resources/graphs/{dataset}/graph.pt",
        meta="resources/graphs/{dataset}/meta.json",
        split=cell_split,
    output:
        "results/audit/{dataset}/{method}/eps~{eps}/seed~{seed}/canaries~{canaries}.json",
    log:
        "logs/audit/{dataset}/{method}/eps~{eps}/seed~{seed}/canaries~{canaries}.log",
    benchmark:
        "benchmarks/audit/{dataset}/{method}/eps~{eps}/seed~{seed}/canaries~{canaries}.tsv"
    wildcard_constraints:
        canaries=r"\d+",
    conda:
        "../../envs/nodedp.yaml"
    threads: 1
    resources:
        **job_resources("audit"),
    params:
        base=method_base,
        hparams=method_hparams,
        delta=config["privacy"]["delta"],
        accountant=config["privacy"]["accountant"],
    shell:
        "python -m nodedp audit --graph resources/graphs/{wildcards.dataset} --split {input.split}"
        " --method {params.base} --name {wildcards.method:q} --hparams {params.hparams:q}"
        " --epsilon {wildcards.eps} --seed {wildcards.seed} --canaries {wildcards.canaries}"
        " --delta {params.delta} --accountant {params.accountant} --threads {threads} --out {output} > {log} 2>&1"


rule audit_report:
    input:
        audit_cells,
    output:
        md="paper/{study}/tables/audit.md",
        tex="paper/{study}/tables/audit.tex",
        png=report(
            "paper/{study}/figures/audit.png",
            caption="../report/audit.rst",
            category="{study}",
            subcategory="Audit",
            labels={"figure": "audit", "study": "{study}"},
        ),
        caption="paper/{study}/figures/audit.caption.txt",
        claims_md="paper/{study}/tables/broken_claims.md",
        claims_tex="paper/{study}/tables/broken_claims.tex",
        mia="results/summary/{study}/mia.parquet",
    log:
        "logs/audit/{study}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        confidence=audit_confidence,
        report_caption=audit_report_caption,
    shell:
        "python -m nodedp audit-report --markdown {output.md} --latex {output.tex} --png {output.png}"
        " --caption {output.caption} --claims-markdown {output.claims_md} --claims-latex {output.claims_tex}"
        " --mia-summary {output.mia} --confidence {params.confidence} {input}"
        " > {log} 2>&1"
