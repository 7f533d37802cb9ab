"""The Spark session Trawl builds (engine.runtime.session.build_spark) with
conf/trawl-default.toml's Spark keys in force."""

from lib.config import load_config


def _compilations(spark) -> int:
    """Classes Spark has generated and compiled (Janino) so far in this JVM."""
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
    return metrics.METRIC_COMPILATION_TIME().getCount()


def test_generated_classes_are_reused_across_rounds(spark):
    """A crawl round runs ~370 distinct generated classes; Spark's default cache of 100
    compiled them all again every round. The same queries run a second time compile
    nothing new, even after more distinct queries than Spark's default cache holds."""
    size = load_config()["spark.sql.codegen.cache.maxEntries"]
    queries = [f"id * 7 + {n} AS x{n}" for n in range(150)]  # each literal: its own class
    assert len(queries) > 100 and size >= 2 * len(queries)
    for query in queries:
        spark.range(2).selectExpr(query).collect()
    first_pass = _compilations(spark)
    for query in queries:
        spark.range(2).selectExpr(query).collect()
    assert _compilations(spark) == first_pass
