"""Airflow connections applied to a site's config inside a task: a database source's login and options, object
storage credentials as the Amazon and Google providers read them."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from airflow.sdk import BaseHook

from sitemap_ops.config import SiteConfig
from sitemap_ops.errors import ConfigError, first_line
from sitemap_ops.storage import StorageConfig

# Connection extras a database source passes on as connection options (libpq's for PostgreSQL, the MySQL
# client's for MySQL/MariaDB); other extras (hook settings such as `cursor`) are not connection options.
DATABASE_EXTRAS = {
    "postgres": ("sslmode", "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcompression", "connect_timeout",
                 "application_name", "target_session_attrs", "gssencmode", "channel_binding", "keepalives",
                 "keepalives_idle", "keepalives_interval", "keepalives_count"),
    "mysql": ("ssl_mode", "ssl_ca", "ssl_capath", "ssl_cert", "ssl_cipher", "ssl_crl", "ssl_crlpath", "ssl_key",
              "compress"),
}  # fmt: skip


def source_location(path: str, kind: str, conn: Any) -> str:
    """A database source's URL with the connection's login, password, host, port and schema, and those of its
    extras that are connection options (sslmode, ...); the URL's scheme (the database kind) and its own
    options stay."""
    auth = quote(conn.login or "", safe="") + (":" + quote(conn.password, safe="") if conn.password else "")
    where = f"{auth}@{conn.host}" + (f":{conn.port}" if conn.port else "") + f"/{conn.schema or ''}"
    scheme, _, rest = path.partition("://")
    options = dict(parse_qsl(urlsplit("x://" + rest).query))
    extra = conn.extra_dejson or {}
    options.update(
        {key: str(extra[key]) for key in DATABASE_EXTRAS.get(kind, ()) if isinstance(extra.get(key), str | int)}
    )
    return f"{scheme}://{where}" + (f"?{urlencode(options)}" if options else "")


def storage_options(storage: StorageConfig, conn: Any) -> StorageConfig:
    """The storage config with an Airflow connection's credentials, as the Amazon and Google providers read
    them: for `aws`, login/password (access keys), extras aws_session_token, profile_name, region_name,
    endpoint_url, role_arn (assumed through STS, with assume_role_kwargs); for `google_cloud_platform`,
    extras key_path or keyfile_dict, and project; for others, login/password as keys."""
    extra = {key.removeprefix(f"extra__{conn.conn_type}__"): value for key, value in (conn.extra_dejson or {}).items()}
    options: dict[str, Any] = dict(storage.options)
    endpoint = extra.get("endpoint_url") or storage.endpoint_url
    if conn.conn_type == "google_cloud_platform":
        keyfile = extra.get("keyfile_dict")
        if keyfile:
            options["token"] = json.loads(keyfile) if isinstance(keyfile, str) else dict(keyfile)
        elif extra.get("key_path"):
            options["token"] = extra["key_path"]
        if extra.get("project"):
            options["project"] = extra["project"]
        return dataclasses.replace(storage, options=options, endpoint_url=endpoint)
    if conn.login:
        options.update(key=conn.login, secret=conn.password)
    if extra.get("aws_session_token"):
        options["token"] = extra["aws_session_token"]
    if extra.get("profile_name"):
        options["profile"] = extra["profile_name"]
    if extra.get("region_name"):
        options.setdefault("client_kwargs", {})["region_name"] = extra["region_name"]
    if extra.get("role_arn"):
        options.update(_assume_role(extra, options, endpoint))
        options.pop("profile", None)  # the role's credentials replace the profile's
    return dataclasses.replace(storage, options=options, endpoint_url=endpoint)


def _assume_role(extra: dict[str, Any], options: dict[str, Any], endpoint: str) -> dict[str, str]:
    """Temporary keys of extra["role_arn"], assumed with the connection's own credentials (STS)."""
    import botocore.exceptions
    import botocore.session

    session = botocore.session.Session(profile=options.get("profile") or None)
    keys = {}
    if options.get("key"):
        keys = {"aws_access_key_id": options["key"], "aws_secret_access_key": options.get("secret")}
        if options.get("token"):
            keys["aws_session_token"] = options["token"]
    region = options.get("client_kwargs", {}).get("region_name") or "us-east-1"
    client = session.create_client(
        "sts", region_name=region, endpoint_url=extra.get("sts_endpoint_url") or endpoint or None, **keys
    )
    try:
        answer = client.assume_role(
            RoleArn=extra["role_arn"],
            RoleSessionName=extra.get("role_session_name") or "sitemap-ops",
            **dict(extra.get("assume_role_kwargs") or {}),
        )
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        raise ConfigError(f"cannot assume the role {extra['role_arn']}: {first_line(exc)}") from None
    credentials = answer["Credentials"]
    return {
        "key": credentials["AccessKeyId"],
        "secret": credentials["SecretAccessKey"],
        "token": credentials["SessionToken"],
    }


def with_connections(config: SiteConfig) -> SiteConfig:
    """The config with the Airflow connections applied (at run time, inside a task; secrets stay masked)."""
    af = config.airflow
    if af.source_conn_id:
        conn = BaseHook.get_connection(af.source_conn_id)
        sources = tuple(
            dataclasses.replace(s, path=source_location(s.path, s.server, conn)) if s.server else s
            for s in config.sources
        )
        config = dataclasses.replace(config, sources=sources)
    if af.storage_conn_id:
        conn = BaseHook.get_connection(af.storage_conn_id)
        config = dataclasses.replace(config, storage=storage_options(config.storage, conn))
    return config
