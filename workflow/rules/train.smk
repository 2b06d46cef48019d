# Training stage. One job trains up to `resources.cells_per_job` cells (dataset, ε, seed) of one method in one
# process that loads Python, torch and each graph once (`python -m nodedp train-cells`); every cell writes the
# metrics.json and ledger.json that `python -m nodedp train` writes for it alone, and a log of its own. A rule per
# job (`train_<method>_<study>-<k>`, from `train_jobs()` in common.smk), as a job's outputs are its cells. On a
# cluster, jobs are submitted in group jobs (`group: train`, the profile's `group-components`).

for job in train_jobs():

    rule:
        name:
            job.name
        input:
            graphs=job.graphs,
            splits=job.splits,
            structure=job.structure,
        output:
            metrics=job.metrics,
            ledgers=job.ledgers,
        log:
            job.log,
            *job.cell_logs,
        benchmark:
            job.benchmark
        params:
            name=job.method,
            base=resolve_method(config, job.method)[0],
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
            bundled("train")
        conda:
            "../../envs/nodedp.yaml"
        shell:
            "python -m nodedp train-cells --method {params.base}"
            " --name {params.name:q} --hparams {params.hparams:q} --delta {params.delta}"
            " --accountant {params.accountant} --threads {threads} --cells {params.cells:q} > {log[0]} 2>&1"
