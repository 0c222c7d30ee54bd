"""The ``privgauss`` command line.

Every subcommand exits with status 2 and a one-line ``error: ...`` message when it refuses
before anything was spent: bad input (missing file or column, a bad header, non-numeric cells,
an empty file, public data without the data's columns, a bad budget), a plan that cannot work,
a budget that cannot pay. A fit that fails after spending (``EstimationFailed``, a DP output,
or outputs that cannot be written) exits with status 3 and says what was spent; ``requirements``
and ``audit`` exit with 1 for "too few rows" and "flagged". A CSV/TSV file's header line is
declared by the format and ``--no-header``, never guessed from its content. Output files are
written atomically: a temporary file renamed into place at the end, so a failure or Ctrl-C
never leaves a half-written file. Nothing derived from private data is printed except DP
outputs. Method choices come from the estimator registries at run time.
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

    \b
    Exit status:
      0  done
      1  requirements: too few rows; audit: the bound exceeds the claim
      2  refused before anything was spent (bad input, a plan that cannot
         work, a budget that cannot pay)
      3  failed after a fit had spent budget (a failed fit, a DP output, or
         outputs that could not be written): that budget stays spent
    """



for _command in (demo, fit_gaussian, fit_mixture, requirements_cmd, experiment, audit,
                 synthesize):
    main.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    main()
