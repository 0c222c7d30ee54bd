"""The ``privgauss`` command line.

Every subcommand exits with status 2 and a one-line ``error: ...`` message on bad input (missing
file or column, non-numeric cells, empty file, public data of the wrong dimension, a bad budget),
before any budget is spent where possible. Output files are written atomically: a temporary file
renamed into place at the end, so a failure or Ctrl-C never leaves a half-written file. Nothing
derived from private data is printed except DP outputs. Method choices come from the estimator
registries at run time.
"""

from __future__ import annotations

import click

from .._version import __version__
from .fit import fit_gaussian, fit_mixture
from .requirements import requirements_cmd
from .synthesize import synthesize
from .tools import audit, demo, experiment

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="privgauss")
def main() -> None:
    """Differentially private estimation of Gaussians and Gaussian mixtures, helped by optional
    public data.

    \b
    Examples:
      privgauss demo
      privgauss fit-gaussian data.csv --rho 0.5 --public public.csv --out model.json
      privgauss fit-mixture data.csv --n-components 3 --epsilon 2 --delta 1e-6 --plot fig.png
      privgauss requirements mixture kssu --n 50000 --d 2 --k 3 --epsilon 1 --delta 1e-6
      privgauss experiment coinpress-covariance --quick --out results/
      privgauss audit coinpress --rho 0.1
      privgauss synthesize model.json -n 10000 -o synthetic.csv
    """



for _command in (demo, fit_gaussian, fit_mixture, requirements_cmd, experiment, audit,
                 synthesize):
    main.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    main()
