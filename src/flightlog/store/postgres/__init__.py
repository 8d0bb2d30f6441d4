"""The PostgreSQL store (``flightlog[postgres]``): the SQL store of ``store/sql/`` with its dialect.

A regular package, not a namespace one, so that the import contracts (``lint-imports``) see
its modules like every other package's.
"""
