# Audit stage (`snakemake audit`): an empirical lower bound on ε beside every claimed ε. A study's `audit:` block
# (config.yaml) names the cells; each job plants canary nodes, trains the method once on the graph with the
# included canaries, bounds ε from below at the claimed δ (one-run audit) and runs a TSTF membership-inference
# attack (two more trainings). The report pools every seed's canaries of a cell into one bound.


# One job audits up to `cells_per_job` // 3 cells of one method in one process (`python -m nodedp audit-cells`); a
# rule per job (`audit_<method>_<study>-<k>`, from `audit_jobs()` in common.smk), as training jobs are. On a
# cluster, jobs are submitted in group jobs (`group: audit`, the profile's `group-components`).
for job in audit_jobs():

    rule:
        name:
            job.name
        input:
            graphs=job.graphs,
            splits=job.splits,
        output:
            job.outputs,
        log:
            job.log,
            *job.cell_logs,
        benchmark:
            job.benchmark
        params:
            base=resolve_method(config, job.method)[0],
            name=job.method,
            hparams=hparams_json(job.method),
            delta=config["privacy"]["delta"],
            accountant=config["privacy"]["accountant"],
            cells=job.cells_json,
        threads: 1
        resources:
            mem_mb=job.mem_mb,
            runtime=job.runtime,
            gres=train_gres,
        group:
            bundled("audit")
        conda:
            "../../envs/nodedp.yaml"
        shell:
            "python -m nodedp audit-cells --method {params.base} --name {params.name:q}"
            " --hparams {params.hparams:q} --delta {params.delta} --accountant {params.accountant}"
            " --threads {threads} --cells {params.cells:q} > {log[0]} 2>&1"


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
        mia="results/summary/{study}/mia.parquet",
    log:
        "logs/audit/{study}.log",
    params:
        confidence=audit_confidence,
        report_caption=audit_report_caption,
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp audit-report --markdown {output.md} --latex {output.tex} --png {output.png}"
        " --caption {output.caption} --mia-summary {output.mia} --confidence {params.confidence} {input}"
        " > {log} 2>&1"
