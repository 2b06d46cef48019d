# Paper stage: tables, figures and report pages depend only on summaries and run tables, so redrawing never
# retrains. Every output marked report() appears in `snakemake --report`, labelled by study and kind; a figure's
# caption is workflow/report/figure.rst, filled with the figure's own caption (its `.caption.txt`).


rule tables:
    input:
        summary="results/summary/{study}/summary.parquet",
        graphs=study_served_metas,
    output:
        md="paper/{study}/tables/accuracy.md",
        tex="paper/{study}/tables/accuracy.tex",
    log:
        "logs/tables/{study}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        notes=study_dataset_notes,
    shell:
        "python -m nodedp tables --summary {input.summary} --markdown {output.md}"
        " --latex {output.tex} --notes {params.notes:q} --graph-meta {input.graphs} > {log} 2>&1"


rule figures:
    input:
        "results/summary/{study}/summary.parquet",
    output:
        png=report(
            "paper/{study}/figures/{figure}.png",
            caption="../report/figure.rst",
            category="{study}",
            subcategory="Figures",
            labels={"figure": "{figure}", "study": "{study}"},
        ),
        caption="paper/{study}/figures/{figure}.caption.txt",
    log:
        "logs/figures/{study}/{figure}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        kind=figure_kind_option,
        report_caption=figure_report_caption,
    shell:
        "python -m nodedp figures --summary {input} {params.kind} --png {output.png}"
        " --caption {output.caption} > {log} 2>&1"


# Each graph method's gap to DP-MLP against the graph's size, paired by seed (studies with `regime`: true for their
# own runs, or the study whose runs it draws).
rule regime:
    input:
        runs=regime_dataset_tables,
        graphs=regime_graph_metas,
    output:
        png=report(
            "paper/{study}/figures/regime.png",
            caption="../report/regime.rst",
            category="{study}",
            subcategory="Figures",
            labels={"figure": "regime", "study": "{study}"},
        ),
        caption="paper/{study}/figures/regime.caption.txt",
        md="paper/{study}/tables/regime.md",
    log:
        "logs/regime/{study}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        report_caption=regime_report_caption,
        resamples=config["bootstrap"]["resamples"],
        confidence=config["bootstrap"]["confidence"],
        seed=config["bootstrap"]["seed"],
    shell:
        "python -m nodedp regime --runs {input.runs} --graph-meta {input.graphs} --png {output.png}"
        " --caption {output.caption} --markdown {output.md} --resamples {params.resamples}"
        " --confidence {params.confidence} --seed {params.seed} > {log} 2>&1"


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


rule paper_tables:
    input:
        paper_table_summaries,
    output:
        md="paper/tables/{key}.md",
        tex="paper/tables/{key}.tex",
    log:
        "logs/paper_tables/{key}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp paper-tables --summary {input} --table {wildcards.key} --out-dir paper/tables > {log} 2>&1"


rule main_tex:
    input:
        main_tex_tables,
    output:
        "paper/main.tex",
    log:
        "logs/paper_tables/main.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp main-tex --out {output} {input} > {log} 2>&1"


# A study's tables as HTML for the report, its audit's table among them where it has an `audit:` block.
rule study_table_html:
    input:
        "paper/{study}/tables/{table}.md",
    output:
        report(
            "paper/{study}/report/{table}.html",
            caption="../report/table.rst",
            category="{study}",
            subcategory="Tables",
            labels={"table": "{table}", "study": "{study}"},
        ),
    log:
        "logs/report/{study}/{table}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp report-page --kind table --title '{wildcards.study}: {wildcards.table}'"
        " --out {output} {input} > {log} 2>&1"


rule paper_table_html:
    input:
        "paper/tables/{key}.md",
    output:
        report(
            "paper/tables/{key}.html",
            caption="../report/paper_table.rst",
            category="Seed papers' tables",
            labels={"table": "{key}"},
        ),
    log:
        "logs/report/paper_tables/{key}.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp report-page --kind table --title '{wildcards.key}' --out {output} {input} > {log} 2>&1"


rule ledger_summary:
    input:
        study_dataset_tables,
    output:
        report(
            "paper/{study}/report/ledgers.html",
            caption="../report/ledgers.rst",
            category="{study}",
            subcategory="Ledgers",
            labels={"table": "ledger summary", "study": "{study}"},
        ),
    log:
        "logs/report/{study}/ledgers.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    shell:
        "python -m nodedp report-page --kind ledgers --title '{wildcards.study}: ledger summary per cell'"
        " --out {output} {input} > {log} 2>&1"


# The configuration page of the grid that ran last; a report of another grid redraws it first
# (nodedp.grid.draw_about_page, called by common.smk's `reportable`), so a report shows the configuration it
# reports.
rule about:
    output:
        report(
            ABOUT_PAGE,
            caption="../report/about.rst",
            category="Configuration and version",
            labels={"page": "about"},
        ),
    log:
        "logs/report/about.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        config=resolved_config_json,
        name=CONFIG_FILES,
    shell:
        "printf '%s' {params.config:q} | python -m nodedp report-page --kind about --config-name {params.name:q}"
        " --title about --out {output} - > {log} 2>&1"


# Every table and figure of a study with its caption, its audit's where it has one (study_audit_outputs).
rule study_index:
    input:
        study_outputs,
    output:
        "paper/{study}/index.md",
    log:
        "logs/report/{study}/index.log",
    localrule: True
    conda:
        "../../envs/nodedp.yaml"
    params:
        note=lambda wildcards: shlex.quote(STUDIES[wildcards.study].get("note", "")),
    shell:
        "python -m nodedp report-page --kind index --title {wildcards.study} --note {params.note} --out {output}"
        " {input} > {log} 2>&1"
