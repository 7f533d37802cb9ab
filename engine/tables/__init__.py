"""Delta access: tables read and written through Spark or delta-rs, their commits, the
task files Spark's tasks write and the driver commits, the crawldb's store and its file
rewrites, and the metrics table."""
