"""Configuration: one documented defaults file, a site file, command-line overrides.

Layers, later wins: ``conf/trawl-default.toml`` < ``--conf-file FILE`` < ``--conf KEY=VALUE``.
Every key must be declared in the defaults file; an unknown key is an error with a
"did you mean" hint. Keys starting with ``spark.`` are passed to Spark unchanged and may
be set without being declared. Values given on the command line are converted to the
type of the declared default.
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

SPARK_PREFIX = "spark."
DEFAULTS_NAME = "trawl-default.toml"
# The keys that name plugins (lib.plugins), and the method each plugin of the key has.
PLUGIN_KEYS = {
    "urlfilter.plugins": "filter",
    "parse.plugins": "parse",
    "parse.filters": "filter",
    "export.plugins": "export",
}


class ConfigError(ValueError):
    """A configuration key or value that Trawl cannot use."""


def defaults_path() -> Path:
    """Locate the defaults file: ``$TRAWL_CONF_DIR`` first, else the checkout's ``conf/``."""
    candidates = []
    if os.environ.get("TRAWL_CONF_DIR"):
        candidates.append(Path(os.environ["TRAWL_CONF_DIR"]) / DEFAULTS_NAME)
    candidates.append(Path(__file__).resolve().parent.parent / "conf" / DEFAULTS_NAME)
    for path in candidates:
        if path.is_file():
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise ConfigError(f"defaults file not found (tried {tried}); set TRAWL_CONF_DIR")


# Derived, not a setting: the regex filter file's (path, content), read on the driver.
REGEX_RULES_TEXT = "_urlfilter.regex.text"
# Derived, not a setting: the keys whose value is still the defaults file's
# (lib.fetching.agent: a crawl beyond loopback must name its agent).
KEYS_AT_DEFAULT = "_keys.at.default"


class Config(Mapping[str, Any]):
    """Read-only mapping of every configuration key to its effective value."""

    def __init__(self, values: Mapping[str, Any], defaults: Mapping[str, Any] | None = None):
        self._values = dict(values)
        self._defaults = dict(defaults or {})

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise ConfigError(_unknown_key_message(key, self._values)) from None

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def spark_settings(self) -> dict[str, str]:
        """The ``spark.*`` keys, as strings for the SparkSession builder."""
        return {k: _spark_string(v) for k, v in self._values.items() if k.startswith(SPARK_PREFIX)}

    def as_dict(self) -> dict[str, Any]:
        """A plain dict copy, cheap to ship to Spark executors. Executors of a cluster have
        no conf folder, so the regex filter file's content travels in it too."""
        values = dict(self._values)
        values[REGEX_RULES_TEXT] = conf_file_text(values["urlfilter.regex.file"])
        if self._defaults:  # else a Config made of another's dict: its list is kept
            values[KEYS_AT_DEFAULT] = self.keys_at_default()
        return values

    def keys_at_default(self) -> list[str]:
        """The keys whose value is still the defaults file's (none known for a Config
        made of a plain dict: then the dict's own ``KEYS_AT_DEFAULT``)."""
        if not self._defaults:
            return list(self._values.get(KEYS_AT_DEFAULT, ()))
        return sorted(
            key
            for key, value in self._values.items()
            if key in self._defaults and self._defaults[key] == value
        )


def conf_file_text(name: str) -> tuple[str, str] | None:
    """``(path, content)`` of a file named in the configuration, relative to the conf
    folder unless absolute; ``None`` for an empty name."""
    if not name:
        return None
    path = Path(name) if Path(name).is_absolute() else defaults_path().parent / name
    return str(path), path.read_text(encoding="utf-8")


def load_config(
    conf_files: Iterable[str | Path] = (),
    overrides: Iterable[str] = (),
    defaults_file: Path | None = None,
) -> Config:
    """Build the effective configuration from the defaults, site files and KEY=VALUE overrides."""
    path = defaults_file or defaults_path()
    defaults = _read_toml(path)
    sites = [(str(conf_file), _read_toml(Path(conf_file))) for conf_file in conf_files]
    pairs = [_split_override(item) for item in overrides]
    defaults = {**defaults, **_plugin_defaults(defaults, sites, pairs)}
    values = dict(defaults)
    for source, table in sites:
        for key, value in table.items():
            values[key] = _layered(values, key, _checked(key, value, defaults, source))
    for key, text in pairs:
        value = _checked(key, _convert(key, text, defaults), defaults, source="--conf")
        values[key] = _layered(values, key, value)
    return Config(values, defaults)


def _layered(values: Mapping[str, Any], key: str, value: Any) -> Any:
    """A table (such as ``parse.plugins``) is merged into the one below it, an entry set
    to "" removed; other values replace."""
    if not isinstance(value, dict):
        return value
    merged = {**values.get(key, {}), **value}
    return {name: entry for name, entry in merged.items() if entry != ""}


def _plugin_defaults(defaults, sites, pairs) -> dict[str, Any]:
    """The keys the plugins named in any layer declare (a plugin module's
    ``TRAWL_DEFAULTS`` TOML file), to be validated like Trawl's own."""
    import importlib

    values = dict(defaults)
    for source, table in sites:
        for key in PLUGIN_KEYS.keys() & table.keys():
            values[key] = _layered(values, key, _checked(key, table[key], defaults, source))
    for key, text in pairs:
        if key in PLUGIN_KEYS:
            values[key] = _layered(values, key, _convert(key, text, defaults))
    declared: dict[str, Any] = {}
    for key in PLUGIN_KEYS:
        named = values[key].values() if isinstance(values[key], dict) else values[key]
        for path in named:
            try:
                module = importlib.import_module(path.partition(":")[0])
            except ImportError as exc:
                raise ConfigError(f"{key}: plugin {path!r} does not import: {exc}") from exc
            extra = getattr(module, "TRAWL_DEFAULTS", None)
            for name, value in (_read_toml(Path(extra)) if extra else {}).items():
                if name in defaults:
                    raise ConfigError(f"{key}: plugin {path!r} declares {name}, a Trawl key")
                declared[name] = value
    return declared


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from exc


def _split_override(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--conf {item!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def _checked(key: str, value: Any, defaults: Mapping[str, Any], source: str) -> Any:
    if key.startswith(SPARK_PREFIX):
        return value
    if key not in defaults:
        raise ConfigError(f"{source}: {_unquoted_key_message(key, value, defaults)}")
    expected = type(defaults[key])
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ConfigError(
            f"{source}: {key} must be {expected.__name__}, got {value!r} ({type(value).__name__})"
        )
    return value


def _convert(key: str, text: str, defaults: Mapping[str, Any]) -> Any:
    """Turn a command-line string into the type of the key's default."""
    if key not in defaults:
        if key.startswith(SPARK_PREFIX):
            return text
        raise ConfigError(f"--conf: {_unknown_key_message(key, defaults)}")
    default = defaults[key]
    try:
        if isinstance(default, bool):
            return _parse_bool(text)
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, list):
            return [part.strip() for part in text.split(",") if part.strip()]
        if isinstance(default, dict):  # NAME=VALUE,NAME=VALUE (merged into the table)
            entries = [part.partition("=") for part in text.split(",") if part.strip()]
            return {name.strip(): value.strip() for name, _, value in entries}
    except ValueError as exc:
        raise ConfigError(f"--conf {key}={text}: {exc}") from exc
    return text


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _spark_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _unquoted_key_message(key: str, value: Any, defaults: Mapping[str, Any]) -> str:
    """Why a site file's key is refused. TOML reads an unquoted dotted key as nested
    tables (``http.agent.name = "X"`` as ``http``), so a table whose dotted names are
    Trawl's or Spark's keys gets the quoted spelling to write instead."""
    dotted = dict(_dotted(key, value)) if isinstance(value, dict) else {}
    known = [name for name in dotted if name in defaults or name.startswith(SPARK_PREFIX)]
    if not known:
        return _unknown_key_message(key, defaults)
    name = known[0]
    return (
        f"TOML read the unquoted key {name} as a table {key!r}: quote dotted keys, "
        f'"{name}" = {json.dumps(dotted[name])}'
    )


def _dotted(prefix: str, table: dict) -> Iterator[tuple[str, Any]]:
    """A nested table's leaves as ``(dotted name, value)``."""
    for name, value in table.items():
        if isinstance(value, dict) and f"{prefix}.{name}" not in PLUGIN_KEYS:
            yield from _dotted(f"{prefix}.{name}", value)
        else:
            yield f"{prefix}.{name}", value


def _unknown_key_message(key: str, known: Iterable[str]) -> str:
    hint = difflib.get_close_matches(key, list(known), n=1)
    suffix = f"; did you mean {hint[0]!r}?" if hint else ""
    return f"unknown configuration key {key!r}{suffix} (keys are declared in {DEFAULTS_NAME})"
