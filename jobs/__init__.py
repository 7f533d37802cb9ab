"""Spark jobs: one module per crawl stage, each runnable by spark-submit."""
