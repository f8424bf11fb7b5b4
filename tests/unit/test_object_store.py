"""S3 settings: contract over environment, one set spelled for delta-rs, pyarrow and S3A;
credentials only as tokens, never shown (engines/object_store.py,
contract/object_store_spec.py)."""

from __future__ import annotations

from sluicegate.contract.object_store_spec import ObjectStore, clear_text_credentials
from sluicegate.contract.tokens import redact_secrets
from sluicegate.engines.object_store import S3Settings, canonical, is_s3

SECRET = "env-secret-value-for-the-unit-test"


def test_contract_wins_over_environment_and_defaults_follow_the_endpoint():
    env = {
        "AWS_ENDPOINT_URL": "https://s3.example.com",
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "env-key-id",
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }
    s = S3Settings.resolve(ObjectStore(endpoint="http://127.0.0.1:9000/"), env)
    assert s.endpoint == "http://127.0.0.1:9000" and s.region == "eu-west-1"
    assert s.path_style and s.allow_http  # an endpoint, and plain HTTP
    assert s.access_key_id == "env-key-id" and s.secret_access_key == SECRET
    aws = S3Settings.resolve(None, {})
    assert (aws.endpoint, aws.path_style, aws.allow_http, aws.region) == (
        None,
        False,
        False,
        "us-east-1",
    )


def test_three_spellings_of_one_setting():
    s = S3Settings.resolve(
        ObjectStore(endpoint="http://127.0.0.1:9000", region="us-east-1"),
        {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": SECRET},
    )
    d = s.delta_options()
    assert d["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9000" and d["AWS_ALLOW_HTTP"] == "true"
    assert d["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "false"
    h = s.hadoop_conf()
    assert h["fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert h["fs.s3a.path.style.access"] == "true"
    assert h["fs.s3a.connection.ssl.enabled"] == "false"
    assert h["fs.s3a.secret.key"] == SECRET
    assert h["fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    assert s.arrow_fs().region == "us-east-1"


def test_secrets_are_hidden_and_redacted():
    s = S3Settings.resolve(None, {"AWS_SECRET_ACCESS_KEY": SECRET})
    assert SECRET not in repr(s)
    assert redact_secrets(f"oops {SECRET}") == "oops ***"


def test_only_tokens_are_credentials():
    ok = {"object_store": {"secret_access_key": "${secret:s3/key}", "access_key_id": "${env:K}"}}
    assert clear_text_credentials(ok) == []
    bad = clear_text_credentials({"object_store": {"session_token": "abc", "region": "x"}})
    assert [k for k, _m in bad] == [("object_store", "session_token")]
    assert "abc" not in bad[0][1]


def test_uris():
    assert is_s3("s3a://b/k") and not is_s3("/data/s3:/x")
    assert canonical("s3a://b/k") == "s3://b/k"
