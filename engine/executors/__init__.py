"""The executors of the crawldb's rules (``crawldb/``): each runs a rule where the data
is, in the driver on a small crawldb's whole table, or in Spark's tasks on partitions of
a large one; and the task-side parse, the round's figures and the crawl-job API's
submissions."""
