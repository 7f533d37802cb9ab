"""The crawl-job HTTP API over a data directory (``./submit.sh api``)."""
