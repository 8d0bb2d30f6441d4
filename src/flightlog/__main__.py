"""``python -m flightlog``: the CLI. Guarded, because a worker process (a server's rule checks,
`flightlog.alerts.api`) loads the parent's main module under another name and must not run it."""

from flightlog.cli.main import main

if __name__ == "__main__":
    main()
