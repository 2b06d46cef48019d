# Paper stage: tables and figures depend only on the summary, so redrawing never retrains.


rule tables:
    input:
        "results/summary/{study}/summary.parquet",
    output:
        md="paper/{study}/tables/accuracy.md",
        tex="paper/{study}/tables/accuracy.tex",
    log:
        "logs/tables/{study}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp tables --summary {input} --markdown {output.md}"
        " --latex {output.tex} > {log} 2>&1"


rule figures:
    input:
        "results/summary/{study}/summary.parquet",
    output:
        report(
            "paper/{study}/figures/accuracy_vs_epsilon.png",
            caption="../report/accuracy_vs_epsilon.rst",
            category="Figures",
        ),
    log:
        "logs/figures/{study}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp figures --summary {input} --png {output} > {log} 2>&1"


rule reproduction_tables:
    input:
        "results/summary/{study}/summary.parquet",
    output:
        expand("paper/{{study}}/tables/{table}.{ext}", table=["reproduction", "claims", "crossover"], ext=["md", "tex"]),
    log:
        "logs/reproduction/{study}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp reproduction --summary {input} --out-dir paper/{wildcards.study}/tables > {log} 2>&1"
