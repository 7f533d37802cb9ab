"""The crawldb: schema, statuses, merge rules, scheduling and scoring (no Spark here)."""
