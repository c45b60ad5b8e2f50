"""Allow ``python -m doctor``."""

from doctor.cli import console_main

if __name__ == "__main__":  # not again in a process spawned from this one (a Dask worker, a spawn pool)
    console_main()
