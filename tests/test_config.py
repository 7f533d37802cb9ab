import re
from pathlib import Path

import pytest

from lib.config import ConfigError, defaults_path, load_config

ROOT = Path(__file__).resolve().parent.parent
KEY_LINE = re.compile(r'^"([a-z][a-zA-Z0-9._]*)"\s*=')
KEY_READ = re.compile(r"""conf(?:ig)?\[\s*["']([a-zA-Z][a-zA-Z0-9._]*)["']\s*\]""")


def declared_keys_with_docs():
    lines = defaults_path().read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        match = KEY_LINE.match(line)
        if match:
            yield match.group(1), lines[number - 1]


def test_every_declared_key_is_documented_with_a_unit():
    keys = dict(declared_keys_with_docs())
    assert len(keys) > 20
    for key, comment_line in keys.items():
        assert comment_line.startswith("#"), f"{key} has no description above it"
    text = defaults_path().read_text(encoding="utf-8")
    for key in keys:
        block = text.split(f'"{key}"')[0].rsplit("\n\n", 1)[-1]
        assert "Unit:" in block, f"{key}: description must give the unit"


def test_every_key_read_by_the_code_is_declared():
    declared = set(dict(declared_keys_with_docs()))
    read = set()
    for folder in ("lib", "crawldb", "jobs"):
        for path in (ROOT / folder).rglob("*.py"):
            read |= set(KEY_READ.findall(path.read_text(encoding="utf-8")))
    assert read, "the scan found no configuration reads"
    assert read - declared == set()


def test_command_line_values_take_the_type_of_the_default():
    conf = load_config(
        overrides=[
            "fetcher.server.delay=2",
            "fetcher.parse=true",
            "http.timeout=500",
            "urlfilter.schemes=http, https ,ftp",
        ]
    )
    assert conf["fetcher.server.delay"] == 2.0 and isinstance(conf["fetcher.server.delay"], float)
    assert conf["fetcher.parse"] is True
    assert conf["http.timeout"] == 500
    assert conf["urlfilter.schemes"] == ["http", "https", "ftp"]


def test_unknown_key_is_an_error_with_a_hint():
    with pytest.raises(ConfigError, match="did you mean 'fetcher.server.delay'"):
        load_config(overrides=["fetcher.server.dealy=1"])


def test_bad_value_names_the_key():
    with pytest.raises(ConfigError, match="http.timeout"):
        load_config(overrides=["http.timeout=soon"])


def test_site_file_layer_and_type_check(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text('"generate.topN" = 50\n"http.agent.name" = "MyBot"\n')
    conf = load_config([site], ["generate.topN=7"])
    assert conf["generate.topN"] == 7  # command line wins over the site file
    assert conf["http.agent.name"] == "MyBot"
    site.write_text('"generate.topN" = "many"\n')
    with pytest.raises(ConfigError, match="generate.topN must be int"):
        load_config([site])


def test_spark_keys_pass_through():
    conf = load_config(overrides=["spark.executor.memory=4g"])
    settings = conf.spark_settings()
    assert settings["spark.executor.memory"] == "4g"
    assert settings["spark.ui.showConsoleProgress"] == "false"


def test_reading_an_undeclared_key_fails_loudly():
    conf = load_config()
    with pytest.raises(ConfigError, match="unknown configuration key"):
        conf["fetcher.server.delays"]


def test_executors_need_no_conf_folder(monkeypatch):
    """Settings shipped to tasks carry the regex filter file's content: an executor of a
    cluster, which has no conf folder, filters the same."""
    import lib.config
    from lib.url.filter import UrlFilter

    shipped = load_config().as_dict()

    def no_conf_folder():
        raise lib.config.ConfigError("no conf folder on this executor")

    monkeypatch.setattr(lib.config, "defaults_path", no_conf_folder)
    url_filter = UrlFilter(shipped)
    assert url_filter.regex is not None
    assert url_filter.reject("http://a.test/page") is None


@pytest.mark.parametrize(
    "text, quoted",
    [
        ('http.agent.name = "X"\n', '"http.agent.name" = "X"'),
        ("spark.executor.memory = '4g'\n", '"spark.executor.memory" = "4g"'),
        ("[generate]\ntopN = 5\n", '"generate.topN" = 5'),
        ("fetcher.parse = false\n", '"fetcher.parse" = false'),
    ],
)
def test_a_dotted_key_left_unquoted_in_a_site_file_is_told_to_be_quoted(tmp_path, text, quoted):
    site = tmp_path / "site.toml"
    site.write_text(text)
    with pytest.raises(ConfigError) as refused:
        load_config([site])
    message = str(refused.value)
    assert message.startswith(f"{site}: TOML read the unquoted key "), message
    assert message.endswith(f"quote dotted keys, {quoted}"), message
