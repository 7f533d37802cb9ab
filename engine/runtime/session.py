"""The SparkSession every job runs in: Delta Lake, Trawl's Spark settings, the jar cache."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from lib.config import Config

DELTA_EXTENSIONS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def build_spark(name: str, conf: Config, master: str | None = None):
    """The SparkSession with Delta Lake; reuses a running session when there is one."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(f"trawl-{name}")
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or "local[*]")
    for key, value in {**DELTA_EXTENSIONS, **conf.spark_settings()}.items():
        builder = builder.config(key, value)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Not under spark-submit: fetch the Delta jars through Ivy, into a cache kept
        # between runs, from Maven Central alone (conf/ivysettings.xml); spark-submit gets
        # them from submit.sh's --jars instead (engine/runtime/jars.py).
        from delta import configure_spark_with_delta_pip

        conf_dir = Path(__file__).resolve().parents[2] / "conf"
        builder = builder.config("spark.jars.ivy", str(cache_dir() / "ivy"))
        builder = builder.config("spark.jars.ivySettings", str(conf_dir / "ivysettings.xml"))
        log_conf = conf_dir / "log4j2.properties"
        if log_conf.is_file():
            builder = builder.config(
                "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_conf}"
            )
        builder = configure_spark_with_delta_pip(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def cache_dir() -> Path:
    """Where downloaded jars are kept: ``$TRAWL_CACHE``, else ``~/.cache/trawl``."""
    return Path(os.environ.get("TRAWL_CACHE", Path.home() / ".cache" / "trawl"))


@contextmanager
def session_conf(spark, settings: dict[str, str]):
    """Spark SQL settings for the jobs run inside the block; the previous values after."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
