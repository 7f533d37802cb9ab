"""Plain-Python crawling components: URLs, robots, fetching, parsing, fingerprints, WARC.

Nothing here imports pyspark: everything is testable without Spark.
"""
