"""Mistakes in what the user gave, told apart from failures of the crawl."""

from __future__ import annotations


class UsageError(Exception):
    """A mistake of the user's: a seed file or segment that does not exist, a data
    directory without a crawldb. A job prints its message as one line, without a stack
    trace, and exits with code 2."""


class MissingInput(UsageError, FileNotFoundError):
    """An input named on the command line (or needed by the job) does not exist."""
