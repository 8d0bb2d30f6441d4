"""What the SQL stores (SQLite, PostgreSQL) share: the queries, the ingest, the row decoding.

The shared SQL is written with ``?`` placeholders (PostgreSQL's connections take them as
``%s``, see ``store/postgres/connection.py``); what differs beyond that is a :class:`Dialect`.
"""
