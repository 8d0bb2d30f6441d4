"""Redaction, both directions: each family of secrets is hidden, ordinary text is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flightlog.errors import InvalidInput
from flightlog.redaction.engine import Redactor

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" + "K1l2M3n4O5p6"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
SECRET_CASES = [
    # (family marker, text with a secret, the secret itself)
    ("aws_access_key_id", "using key AKIAIOSFODNN7EXAMPLE for s3", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_access_key_id", "session ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"),
    (
        "aws_secret_access_key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws_secret_access_key",
        '{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("github_token", f"git clone https://x:{GITHUB}@github.com/o/r", GITHUB),
    (
        "github_token",
        "token gho_16C7e42F292c6912E7710c838347Ae178B4a ok",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_token",
        "ghs_abcdefghijklmnopqrstuvwxyz0123456789",
        "ghs_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "github_token",
        "ghu_abcdefghijklmnopqrstuvwxyz0123456789",
        "ghu_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "github_token",
        "ghr_abcdefghijklmnopqrstuvwxyz0123456789",
        "ghr_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "github_token",
        "pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    ("gitlab_token", "GITLAB glpat-xYz12345678901234567 pushed", "glpat-xYz12345678901234567"),
    (
        "slack_token",
        "bot xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    ),
    ("slack_token", "user xoxp-123456789012-abcdefghij", "xoxp-123456789012-abcdefghij"),
    (
        "slack_webhook",
        "posting to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    ("jwt", f"session={JWT}", JWT),
    (
        "huggingface_token",
        "login hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    ),
    (
        "api_key",
        "OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    ),
    ("secret", "connect password=hunter2 user=bob", "hunter2"),
    ("secret", "passwd: correct-horse", "correct-horse"),
    ("secret", "secret: s3cr3t", "s3cr3t"),
    ("secret", 'api_key="abc def ghi"', "abc def ghi"),
    ("secret", "apikey=XYZ123", "XYZ123"),
    ("secret", "token=abc123", "abc123"),
    ("secret", "access_token: zzz-yyy", "zzz-yyy"),
    ("secret", "client_secret=qq11qq", "qq11qq"),
    ("secret", "clientSecret: camel99", "camel99"),
    ("secret", "export PGPASSWORD=pg-pass-1", "pg-pass-1"),
    ("secret", "{'password': 'from-a-dict'}", "from-a-dict"),
    ("secret", "X-Api-Key: key-123456", "key-123456"),
    ("authorization", "Authorization: Bearer abc.def.ghi", "abc.def.ghi"),
    ("authorization", "authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("authorization", "curl -H 'Authorization: token 12345678abc'", "12345678abc"),
    ("authorization", "headers={'Authorization': 'Bearer tok-98765'}", "tok-98765"),
    ("authorization", "sent Bearer abcdefgh12345 upstream", "abcdefgh12345"),
    ("url_password", "postgresql://trainer:p4ss@db.internal:5432/runs", "p4ss"),
    ("url_password", "redis://:r3d1s@localhost:6379/0", "r3d1s"),
    ("url_password", "https://user:p@ss@host.example.com/x", "p@ss"),
    # vendors' tokens by their prefixes (issue 18, item 15)
    ("stripe_key", "charge with sk_live_51H8xKqL2eZvKYlo2C9aBcDeFgHiJk0 ok", "sk_live_51H8xKqL2eZvKYlo2C9aBcDeFgHiJk0"),
    ("stripe_key", "STRIPE=sk_test_4eC39HqLyjWDarjtT1zdp7dc0", "sk_test_4eC39HqLyjWDarjtT1zdp7dc0"),
    ("stripe_key", "restricted rk_live_51H8xKqL2eZvKYlo2C9aBcDeFgH1 used", "rk_live_51H8xKqL2eZvKYlo2C9aBcDeFgH1"),
    (
        "stripe_webhook_secret",
        "signing with whsec_9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d",
        "whsec_9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d",
    ),
    (
        "npm_token",
        "//registry.npmjs.org/:_authToken npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ),
    (
        "pypi_token",
        "twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmcCJGE1YjQ3ZjE4LWQ0NjQtNDc0Mi1hN2MwLTk4NzY1NDMyMTBhYgACKlsz dist/*",
        "pypi-AgEIcHlwaS5vcmcCJGE1YjQ3ZjE4LWQ0NjQtNDc0Mi1hN2MwLTk4NzY1NDMyMTBhYgACKlsz",
    ),
    (
        "sendgrid_key",
        "SENDGRID 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 sent",
        "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",
    ),
    # a command's password option and its value, separated by a blank, in a logged command line
    ("secret", "+ docker login --password s3cr3t-pw registry.example.com", "s3cr3t-pw"),
    ("secret", "+ docker login -u bob -p s3cr3t-pw registry.example.com", "s3cr3t-pw"),
    ("secret", "$ docker login --password=s3cr3t-pw ghcr.io", "s3cr3t-pw"),
    ("secret", "running: podman login -p s3cr3t-pw quay.io", "s3cr3t-pw"),
    ("secret", "twine upload --repository testpypi -u bob -p hunter2-pw dist/*", "hunter2-pw"),
    ("secret", "curl -u alice:pa55w0rd https://api.example.com/v1", "pa55w0rd"),
    ("secret", "curl -s --user alice:pa55w0rd https://api.example.com/v1", "pa55w0rd"),
    ("secret", "exec: train.py --api-key abc123xyz --lr 0.1", "abc123xyz"),
    ("secret", "exec: train.py --token tok-98765 --lr 0.1", "tok-98765"),
]


@pytest.mark.parametrize(("family", "text", "secret"), SECRET_CASES)
def test_each_family_is_redacted_with_its_marker(family: str, text: str, secret: str) -> None:
    redactor = Redactor(env={})
    out = redactor.redact(text)
    assert secret not in out
    assert f"[REDACTED:{family}]" in out
    assert redactor.count >= 1


def test_redaction_keeps_what_surrounds_the_secret() -> None:
    r = Redactor(env={})
    assert r.redact("connect password=hunter2 user=bob") == "connect password=[REDACTED:secret] user=bob"
    assert r.redact("Authorization: Bearer abc.def") == "Authorization: Bearer [REDACTED:authorization]"
    assert r.redact("https://u:pw@h.io/x") == "https://u:[REDACTED:url_password]@h.io/x"
    assert r.redact("https://hooks.slack.com/services/T0/B0/XYZ") == "https://hooks.slack.com/[REDACTED:slack_webhook]"


ORDINARY = [
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 on main",
    "run 1b4e28ba-2fa1-11d2-883f-0016d3cca427 started",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "loaded /home/user/.ssh/id_rsa.pub and /data/train/part-00001.parquet",
    "step 10 loss=0.123 lr=0.01 tokens=123 token_count=5 max_tokens=1024",
    "downloading https://example.com/models/v1?revision=main&file=config.json",
    "ssh://git@github.com/org/repo.git and git@github.com:org/repo.git",
    "model=bert-base-uncased tokenizer=bert-base-uncased",
    "eos_token=</s> pad_token: <pad> bos_token_id=1",
    "if token == expected:",
    "    def login(self, password: str) -> None:",
    "password: None",
    "Token is valid (permission: write).",
    "secret_name=prod-db private_key_path=/etc/key.pem password_file=/run/pw",
    "sort_key=name cache key: abc",
    "task-abcdefghijklmnopqrstuvwxyz0123456789abc finished",
    "ASIAN markets; AKIA is a prefix; AKIAshort",
    "hf_hub_download ghp_short gh_cli glpat-short",
    "base64 weights: bW9kZWwtd2VpZ2h0cy12MQ== resnet50-0676ba61.pth",
    "eyJ0eXAi alone is not a JWT",
    "listening on http://0.0.0.0:8080/metrics",
    "Authorization: Bearer [REDACTED:jwt]",
    "keyboard layout us-international",
    # look-alikes of the vendors' tokens and of command-line secrets (issue 18, item 15)
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 uuid 123e4567-e89b-12d3-a456-426614174000",
    "blob c2tfbGl2ZV9ub3RfYV9rZXk= id dGhpcyBpcyBub3QgYSBzZWNyZXQ= done",
    "the sk_test key is for sandbox mode; sk_live keys are for production",
    "publishable pk_live_51H8xKqL2eZvKYlo2C9aBcDeFgHiJk0 goes in the page",
    "npm_config_cache=/root/.npm npm_lifecycle_event=build npm_package_version=1.2.3",
    "as noted in SG. Smith et al. (SG.2), see SG.AB.CD",
    "whsec_ and rk_ are prefixes; pypi-simple is an index; pypi-server 1.5",
    "docker run -p 8080:80 nginx && ssh -p 2222 bob@host",
    "curl -u $USER:$PASS https://x and curl -u alice https://x",
    "train.py --max-tokens 1024 --token-file /run/tok --password-file /run/pw",
    "use --password to set it, or the --token option",
    "docker login -p $REGISTRY_PASSWORD registry",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_kept(text: str) -> None:
    redactor = Redactor(env={"KEYBOARD_LAYOUT": "us-international", "PWD": "/home/user"})
    assert redactor.redact(text) == text
    assert redactor.count == 0


def test_json_stays_valid_when_values_are_redacted() -> None:
    r = Redactor(env={})
    line = '{"msg": "login", "password": "hunter2", "pin_password": 123456, "user": "bob", "ok": true}'
    out = json.loads(r.redact(line))
    assert out == {
        "msg": "login",
        "password": "[REDACTED:secret]",
        "pin_password": "[REDACTED:secret]",
        "user": "bob",
        "ok": True,
    }


def test_private_key_block_is_one_marker() -> None:
    key = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        "Proc-Type: 4,ENCRYPTED\n"
        "DEK-Info: AES-128-CBC,3F17F5316E2BAC89\n"
        "\n"
        "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\n"
        "Z1BjP5CE/Wm/Rr500P\n"
        "-----END RSA PRIVATE KEY-----"
    )
    r = Redactor(env={})
    assert r.redact(f"before\n{key}\nafter\n") == "before\n[REDACTED:private_key]\nafter\n"
    escaped = json.dumps({"key": key + "\n"})  # a key inside a JSON string: "\n" escapes
    assert json.loads(r.redact(escaped)) == {"key": "[REDACTED:private_key]\n"}


def test_unterminated_private_key_hides_the_body_but_not_what_follows() -> None:
    r = Redactor(env={})
    text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nEpoch 1 done\n"
    assert r.redact(text) == "[REDACTED:private_key]\nEpoch 1 done\n"


def test_environment_secret_values_are_redacted_wherever_they_appear() -> None:
    env = {
        "GITHUB_TOKEN": "not-a-ghp-shape-1234",
        "MY_SERVICE_PASSWORD": "correct horse battery",
        "WANDB_API_KEY": "0123456789abcdef0123",
        "DATABASE_URL": "postgresql://u:dbpw12345@db/x",
        "SENTRY_DSN": "https://abcdef123456@o1.ingest.sentry.io/1",
        "FLIGHTLOG_TOKEN": "flt-abcdefgh",
        "SHORT_TOKEN": "abc",  # under 8 characters: too short to hide everywhere
        "HF_TOKEN_PATH": "/root/.cache/token",  # where a secret is, not the secret
        "GIT_AUTHOR_NAME": "Grace Hopper",
        "TOKENIZERS_PARALLELISM": "false",
        "KEYBOARD": "us-international",
    }
    r = Redactor(env=env)
    out = r.redact(
        "cfg not-a-ghp-shape-1234 | correct horse battery | 0123456789abcdef0123 | "
        "postgresql://u:dbpw12345@db/x | https://abcdef123456@o1.ingest.sentry.io/1 | flt-abcdefgh"
    )
    for name in (
        "GITHUB_TOKEN",
        "MY_SERVICE_PASSWORD",
        "WANDB_API_KEY",
        "SENTRY_DSN",
        "FLIGHTLOG_TOKEN",
    ):
        assert f"[REDACTED:env:{name}]" in out
    assert "dbpw12345" not in out and "correct horse" not in out
    kept = "abc /root/.cache/token Grace Hopper false us-international"
    assert r.redact(kept) == kept


def test_an_environment_secret_that_is_a_path_to_a_file_is_not_hidden(tmp_path: Path) -> None:
    key_file = tmp_path / "service-account.json"
    key_file.write_text("{}")
    r = Redactor(env={"GOOGLE_APPLICATION_CREDENTIALS": str(key_file)})
    assert r.redact(f"reading {key_file}") == f"reading {key_file}"


def test_redact_mapping_hides_secret_keys_recursively_and_scans_strings() -> None:
    r = Redactor(env={})
    params = {
        "lr": 0.1,
        "password": 1234,
        "db": {"host": "db", "api_key": "abc"},
        "credentials": {"user": "bob", "pins": [1, 2]},
        "runs": [{"secret": "s"}, {"note": f"uses {GITHUB}"}],
        "max_tokens": 1024,
        "enabled": True,
        "empty_token": None,
    }
    assert r.redact_mapping(params) == {
        "lr": 0.1,
        "password": "[REDACTED:secret]",
        "db": {"host": "db", "api_key": "[REDACTED:secret]"},
        "credentials": {
            "user": "[REDACTED:secret]",
            "pins": ["[REDACTED:secret]", "[REDACTED:secret]"],
        },
        "runs": [{"secret": "[REDACTED:secret]"}, {"note": "uses [REDACTED:github_token]"}],
        "max_tokens": 1024,
        "enabled": True,
        "empty_token": None,
    }
    assert params["password"] == 1234  # the input is not modified


def test_user_patterns_replace_the_match_or_its_first_group() -> None:
    r = Redactor([r"internal-[0-9]{4}", r"customer=(\w+)"], env={})
    assert r.redact("host internal-1234 customer=acme ok") == "host [REDACTED:custom] customer=[REDACTED:custom] ok"
    assert r.count == 2


def test_a_bad_user_pattern_names_the_pattern_and_the_reason() -> None:
    with pytest.raises(InvalidInput, match=r"invalid redaction pattern '\(unclosed'"):
        Redactor(["(unclosed"], env={})
    with pytest.raises(InvalidInput, match="matches the empty string"):
        Redactor(["x*"], env={})


def test_text_that_is_not_utf8_survives_redaction_round_trip() -> None:
    r = Redactor(env={})
    odd = "surrogate \udcff and password=x1 café"
    assert r.redact(odd) == "surrogate \udcff and password=[REDACTED:secret] café"


def test_count_accumulates_every_replacement() -> None:
    r = Redactor(env={})
    r.redact("password=a password=b AKIAIOSFODNN7EXAMPLE")
    r.redact_mapping({"token": "x"})
    assert r.count == 4


@pytest.mark.parametrize(
    ("argv", "stored"),
    [
        (
            ["docker", "login", "-u", "bob", "-p", "s3cr3t-pw", "registry.example.com"],
            ["docker", "login", "-u", "bob", "-p", "[REDACTED:secret]", "registry.example.com"],
        ),
        (
            ["/usr/bin/twine", "upload", "-u", "__token__", "-p", "hunter2-pw", "dist/x.whl"],
            ["/usr/bin/twine", "upload", "-u", "__token__", "-p", "[REDACTED:secret]", "dist/x.whl"],
        ),
        (
            ["curl", "-s", "-u", "alice:pa55w0rd", "https://api.example.com"],
            ["curl", "-s", "-u", "alice:[REDACTED:secret]", "https://api.example.com"],
        ),
        (["sh", "-c", "docker login -p s3cr3t-pw ghcr.io"], ["sh", "-c", "docker login -p [REDACTED:secret] ghcr.io"]),
        # the same short options mean nothing secret elsewhere
        (["docker", "run", "-p", "8080:80", "nginx"], ["docker", "run", "-p", "8080:80", "nginx"]),
        (["python", "serve.py", "-p", "8080", "-u", "alice"], ["python", "serve.py", "-p", "8080", "-u", "alice"]),
        (["curl", "-u", "alice", "https://x"], ["curl", "-u", "alice", "https://x"]),
    ],
)
def test_a_command_lines_password_option_is_hidden_by_its_place(argv: list[str], stored: list[str]) -> None:
    assert Redactor(env={}).redact_argv(argv) == stored
