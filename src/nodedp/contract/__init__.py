"""The method contract, torch-free, below the plans: what a method receives and returns and its registry entry
(``base``), the registry (``registry``) and every family's entry and hyperparameters (``specs``), a cell's
names (``naming``: the reference suffix, the ε of a path) and the public degree bounds a method's structure
uses (``structure``). Planning, the config checks and the workflow read it without torch."""
