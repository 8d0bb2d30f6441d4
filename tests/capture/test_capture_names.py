"""One policy for secret names: every place that asks agrees on the same table (issue 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

import flightlog
from flightlog.alerts.secrets import secret_key
from flightlog.redaction.engine import Redactor
from flightlog.redaction.names import is_secret_name
from flightlog.sdk.context import allowed_env

SECRET = [
    "password",
    "db_password",
    "PGPASSWORD",
    "passwd",
    "passphrase",
    "db_pwd",
    "secret",
    "client_secret",
    "clientSecret",
    "token",
    "access_token",
    "GITHUB_TOKEN",
    "HF_TOKEN",
    "AWS_SESSION_TOKEN",
    "api_key",
    "apiKey",
    "X-Api-Key",
    "WANDB_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "secret_key",
    "private_key",
    "ssh_key",
    "DEPLOY_KEY",
    "encryption_key",
    "auth",
    "Authorization",
    "proxy-authorization",
    "credentials",
    "SENTRY_DSN",
    "cookie",
    "session_token",
    "AZURE_STORAGE_CONNECTION_STRING",
    "webhook_signature",
    "credentials.user",
    "db.password",
    "API_KEY_2",
    "DB_PASSWORD_PROD",
    "GITHUB_TOKEN_V2",
    "client_secret_staging",
]
NOT_SECRET = [
    "token_count",
    "max_tokens",
    "tokens",
    "num_tokens",
    "secret_name",
    "private_key_path",
    "password_file",
    "HF_TOKEN_PATH",
    "sort_key",
    "cache_key",
    "rng_key",
    "PWD",
    "OLDPWD",
    "TOKENIZERS_PARALLELISM",
    "KEYBOARD_LAYOUT",
    "GIT_AUTHOR_NAME",
    "eos_token",
    "pad_token",
    "author",
    "keyboard",
    "MASTER_PORT",
    "lr",
    "SSH_AUTH_SOCK",
    "session_id",
    "model.name",
    "token_count_2",
    "secret_name_prod",
    "max_tokens_v2",
]
TABLE = [(name, True) for name in SECRET] + [(name, False) for name in NOT_SECRET]
VALUE = "s3cr3t-value-123"


def hidden_in_mapping(name: str) -> bool:
    return Redactor(env={}).redact_mapping({name: VALUE})[name] != VALUE


def hidden_in_text(name: str) -> bool:
    return VALUE not in Redactor(env={}).redact(f"{name}={VALUE} and more")


def hidden_as_environment(name: str) -> bool:
    return VALUE not in Redactor(env={name: VALUE}).redact(f"value {VALUE} seen")


def left_out_of_context(name: str) -> bool:
    return name not in allowed_env({name: VALUE}, extra=(name,))


@pytest.mark.parametrize(("name", "secret"), TABLE)
def test_every_caller_agrees_on_each_name(name: str, secret: bool) -> None:
    answers = {
        "policy": is_secret_name(name),
        "capture fields": hidden_in_mapping(name),
        "alerts": secret_key(name),
    }
    if "." not in name:  # a dotted path is structured data, not a text or environment name
        answers["capture text"] = hidden_in_text(name)
        answers["environment values"] = hidden_as_environment(name)
        answers["run context env"] = left_out_of_context(name)
    assert answers == dict.fromkeys(answers, secret)


def test_params_recorded_by_the_sdk_follow_the_same_table(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    run.log_params({name: VALUE for name, _ in TABLE})
    run.finish()
    params = flightlog.Client().run(run.id).params
    hidden = {name: params[name] != VALUE for name, _ in TABLE}
    assert hidden == dict(TABLE)


def test_url_query_parameters_add_a_bare_key_and_sig_and_nothing_else() -> None:
    """The one documented widening: in a notifier's URL, ``?key=`` and ``&sig=`` are credentials;
    in params and logs (``sort key``, gdb's ``sig=6``) they are not."""
    assert secret_key("key") and secret_key("sig")
    for name in ("key", "sig"):
        assert not is_secret_name(name) and not hidden_in_mapping(name) and not hidden_in_text(name)
