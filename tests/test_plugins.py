"""Plugins a user adds without forking Trawl: a package kept under tests/ (its own
pyproject.toml, installed into the environment here) gives a URL filter, a parser for a
made-up MIME type the test web serves, and an exporter, all named in the settings with
a key of its own; the shipped PDF and feed parsers and the JSON Lines exporter run
beside them. The request log, the parse table and the exported files prove each ran."""

import pytest
from plugincrawl import check_plugin_crawl, install_package, plugin_crawl_args

from jobs import crawl
from lib.config import ConfigError, load_config
from lib.plugins import PluginError, check

AGENT_URL = "https://trawl.invalid/test-plugins"


@pytest.fixture(scope="module")
def installed():
    install_package()


@pytest.mark.spark
@pytest.mark.web
def test_a_crawl_runs_a_plugin_packages_filter_parser_and_exporter(installed, spark, web, tmp_path):
    assert crawl.main(plugin_crawl_args(web, tmp_path, AGENT_URL)) == 0
    check_plugin_crawl(web, tmp_path, AGENT_URL)


@pytest.mark.spark
def test_a_plugin_filter_keeps_crawldb_urls_out_of_the_fetch_list(installed, spark):
    """At generate (generate.filter) as at inject: a URL already in the crawldb that the
    package's filter now refuses is not generated; its row stays."""
    from test_generate import NOW, crawldb_rows, select_due

    from crawldb.schema import CRAWLDB
    from engine.tables.frames import rows_to_df

    crawldb = rows_to_df(spark, spark.sparkContext.parallelize(crawldb_rows()), CRAWLDB)
    settings = ["urlfilter.plugins=trawl_test_plugin:RefusePath", "testplugin.refuse=h3.test/"]
    settings.append("generate.filter=true")
    chosen = {r["url"] for r in select_due(crawldb, load_config(overrides=settings), NOW)}
    assert chosen and not any("h3.test" in url for url in chosen)
    everything = {r["url"] for r in select_due(crawldb, load_config(), NOW)}
    assert everything - chosen == {f"http://h3.test/{page}" for page in range(5)}


def test_a_wrong_plugin_path_is_named_with_its_key():
    with pytest.raises(
        ConfigError, match="urlfilter.plugins: plugin 'nowhere.at.all:Filter' does not import"
    ):
        load_config(overrides=["urlfilter.plugins=nowhere.at.all:Filter"])
    conf = load_config(overrides=["parse.filters=lib.plugins:PLUGIN_KEYS"])
    with pytest.raises(PluginError, match="parse.filters: plugin 'lib.plugins:PLUGIN_KEYS' is"):
        check(conf)
    conf = load_config(overrides=["parse.filters=lib.content.pdf:PdfParser"])
    with pytest.raises(PluginError, match="parse.filters: .*PdfParser' has no method filter"):
        check(conf)


def test_a_wrong_plugin_path_exits_2_from_the_command_line(tmp_path, capsys):
    args = ["--data", str(tmp_path), "--rounds", "1", "--conf", "export.plugins=lib.export:Nothing"]
    assert crawl.main(args) == 2
    err = capsys.readouterr().err
    assert "export.plugins: plugin 'lib.export:Nothing': lib.export has no Nothing" in err
