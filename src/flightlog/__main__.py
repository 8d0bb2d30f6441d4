from flightlog.cli.main import main

main()
