"""``python -m privgauss.cli``: the ``privgauss`` command."""

from privgauss.cli import main

main(prog_name="privgauss")
