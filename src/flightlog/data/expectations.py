"""Expectations: the assumptions a pipeline makes about its data, checked batch by batch.

Write them in Python (``Between("age", 0, 120)``) or in YAML (:mod:`flightlog.data.expectfile`);
:func:`flightlog.data.validation.validate` runs them in one streaming pass. This module gathers
every kind in one place:

=================  =================================================================
``ColumnPresent``  the column exists
``ColumnType``     its type is of a family (integer, float, number, string, bool,
                   datetime, date) or an exact Arrow type (int64, double, ...)
``NotNull``        no nulls, or at most a share of them (NaN counts as null)
``Between``        values within [min, max] (numbers, dates, times)
``InSet``          values from a fixed set
``Unique``         no value twice
``MatchesRegex``   values match a regular expression (RE2)
``RowCount``       the number of rows is within [min, max]
``Freshness``      the newest time in a column is at most ``max_age`` old
=================  =================================================================
"""

from flightlog.data.expectbase import MAX_EXAMPLES, REDACTED, Expectation, Result, column_names
from flightlog.data.tablechecks import TYPE_FAMILIES, ColumnPresent, ColumnType, Freshness, RowCount
from flightlog.data.valuechecks import Between, InSet, MatchesRegex, NotNull, Unique

__all__ = [
    "Expectation",
    "Result",
    "ColumnPresent",
    "ColumnType",
    "NotNull",
    "Between",
    "InSet",
    "Unique",
    "MatchesRegex",
    "RowCount",
    "Freshness",
    "TYPE_FAMILIES",
    "REDACTED",
    "MAX_EXAMPLES",
    "column_names",
]
