"""The Python environment of the DataFrame tests and benchmarks (pyarrow, pandas, Dask, Polars, moto).

It lives at $TESSERA_PYENV, else $HOME/.cache/tessera/pyenv (scripts/setup.sh makes it). The
scripts call reexec_in_pyenv() first, so that `python3 benchmarks/gen_taxi_csv.py ...` runs in
that environment whatever python3 is first in PATH.
"""
import os
import sys


def pyenv_dir():
    return os.environ.get("TESSERA_PYENV") or os.path.join(os.path.expanduser("~"), ".cache", "tessera", "pyenv")


def pyenv_python():
    return os.path.join(pyenv_dir(), "bin", "python")


def reexec_in_pyenv():
    """Runs this script again under the environment's python unless it already runs there.

    Nothing happens when the environment is missing (the imports then say what is missing) or
    when this process was started by such a re-exec already.
    """
    python = pyenv_python()
    if os.environ.get("TESSERA_PYENV_REEXEC") == "1" or not os.access(python, os.X_OK):
        return
    if os.path.realpath(sys.prefix) == os.path.realpath(pyenv_dir()):
        return
    os.environ["TESSERA_PYENV_REEXEC"] = "1"
    os.execv(python, [python] + sys.argv)
