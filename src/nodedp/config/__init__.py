"""Checks on config.yaml beyond its JSON schema, and method variants; shared by the workflow and the CLI. One
module per concern, in the order the workflow runs them: ``read`` (YAML with file and line, the schema naming the
field, plugins), ``variants`` (method blocks, variants and reference names), ``limits`` (δ < 1/N, batch sizes
against public sizes), ``studies`` (sweeps, the regime figure, the audit plan) and ``check`` (``check_config``,
all of them). Details: docs/design/config.md.
"""
