"""Plugins: URL filters, parsers, parse filters and exporters a user adds without forking
Trawl (as Nutch's plugins, Scrapy's middlewares and pipelines named in the settings).

A plugin is named ``module:attribute``, importable on the Python path of the driver and
the executors. One instance is made per task: ``attribute.from_conf(conf)`` when the
attribute has ``from_conf``, else ``attribute()``. The keys that name plugins, and the
method each plugin of the key must have:

- ``urlfilter.plugins`` (list): ``filter(url) -> reason | None``, after the built-in
  filters, wherever a URL enters the crawldb (seeds, outlinks, redirect targets), and
  on the due URLs at generate with ``generate.filter``;
- ``parse.plugins`` (table MIME type -> plugin): ``parse(url, body, content_type,
  headers) -> dict`` (``title``, ``text``, ``outlinks`` as ``(url, anchor)`` pairs,
  ``language``, ``description``, ``canonical``, ``metadata``: all optional);
- ``parse.filters`` (list): ``filter(url, page) -> dict`` of metadata to add to the
  page (``page``: the parsed fields);
- ``export.plugins`` (list): ``export(documents)`` with a list of document dicts per
  batch of a task, and ``close()`` (optional) when the task's documents are all given.

A plugin module may declare configuration keys of its own: a module attribute
``TRAWL_DEFAULTS``, the path of a TOML file laid out as ``conf/trawl-default.toml``
(each key documented, with its default); they are validated like Trawl's.

A plugin path that does not import, or whose object lacks the method, is an error
naming the key and the path (``PluginError``, a ``ConfigError``: exit code 2).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from lib.config import PLUGIN_KEYS, ConfigError


class PluginError(ConfigError):
    """A plugin named in the configuration that cannot be used."""


def named(conf: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(key, path)`` of every plugin the configuration names."""
    for key in PLUGIN_KEYS:
        value = conf.get(key) or ()
        for path in value.values() if isinstance(value, Mapping) else value:
            yield key, path


def resolve(key: str, path: str) -> Any:
    """The object ``module:attribute`` names; ``PluginError`` naming the key when not."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise PluginError(f"{key}: plugin {path!r} must be named module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginError(f"{key}: plugin {path!r} does not import: {exc}") from exc
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise PluginError(f"{key}: plugin {path!r}: {module_name} has no {attribute}") from None


def instance(key: str, path: str, conf: Mapping[str, Any]) -> Any:
    """A new instance of the plugin ``path`` of ``key``, checked for its method."""
    factory = resolve(key, path)
    maker = getattr(factory, "from_conf", None)
    if maker is None and not callable(factory):
        raise PluginError(f"{key}: plugin {path!r} is neither a class nor a factory")
    try:
        made = maker(conf) if maker is not None else factory()
    except PluginError:
        raise
    except Exception as exc:
        raise PluginError(f"{key}: plugin {path!r} could not be made: {exc}") from exc
    method = PLUGIN_KEYS[key]
    if not callable(getattr(made, method, None)):
        raise PluginError(f"{key}: plugin {path!r} has no method {method}()")
    return made


def instances(key: str, conf: Mapping[str, Any]) -> list[Any]:
    """Instances of the plugins of a list key, in order."""
    return [instance(key, path, conf) for path in conf.get(key) or ()]


def parsers(conf: Mapping[str, Any]) -> dict[str, Any]:
    """MIME type -> parser instance (``parse.plugins``); one instance per plugin path."""
    made: dict[str, Any] = {}
    table = conf.get("parse.plugins") or {}
    by_path = {path: instance("parse.plugins", path, conf) for path in set(table.values())}
    for mime, path in table.items():
        made[mime.lower()] = by_path[path]
    return made


def check(conf: Mapping[str, Any]) -> None:
    """Make every plugin the configuration names once (a job's start-up check)."""
    for key, path in named(conf):
        instance(key, path, conf)
