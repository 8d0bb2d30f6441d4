"""The command line: ``flightlog runs ls``, ``flightlog logs RUN``, ``flightlog run -- CMD`` …"""
