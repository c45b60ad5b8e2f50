"""A generated corpus of secret shapes: documented token formats of AI, cloud, code-hosting and payment
providers, PEM keys, JWTs, URL passwords, base64 and URL-encoded values, and random values under harmless
names. Each value is random per run, so a leak scan cannot pass by matching a fixed string.
"""

from __future__ import annotations

import base64
import secrets
import string
import urllib.parse

_AN = string.ascii_letters + string.digits


def _r(n: int, alphabet: str = _AN) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _upper(n: int) -> str:
    return _r(n, string.ascii_uppercase + string.digits)


def _hex(n: int) -> str:
    return secrets.token_hex((n + 1) // 2)[:n]


#: provider -> a function giving one fresh token of its documented shape
SHAPES = {
    "openai": lambda: "sk-" + _r(48), "openai_proj": lambda: "sk-proj-" + _r(74, _AN + "_-"),
    "openai_svc": lambda: "sk-svcacct-" + _r(60), "anthropic": lambda: "sk-ant-api03-" + _r(93, _AN + "_-") + "AA",
    "anthropic_admin": lambda: "sk-ant-admin01-" + _r(80), "nvidia": lambda: "nvapi-" + _r(64, _AN + "_-"),
    "huggingface": lambda: "hf_" + _r(34), "hf_org": lambda: "api_org_" + _r(34),
    "aws_akia": lambda: "AKIA" + _upper(16), "aws_asia": lambda: "ASIA" + _upper(16),
    "aws_secret": lambda: _r(40, _AN + "/+"), "gcp_api": lambda: "AIza" + _r(35, _AN + "_-"),
    "gcp_oauth": lambda: "ya29." + _r(80, _AN + "_-"), "azure_key": lambda: _hex(32),
    "azure_conn": lambda: f"DefaultEndpointsProtocol=https;AccountName=acct{_hex(6)};AccountKey={_r(86)}==",
    "azure_sas": lambda: f"sv=2022-11-02&ss=b&sig={urllib.parse.quote(_r(43) + '=')}",
    "github_pat": lambda: "ghp_" + _r(36), "github_oauth": lambda: "gho_" + _r(36),
    "github_fine": lambda: "github_pat_" + _r(22) + "_" + _r(59), "github_app": lambda: "ghs_" + _r(36),
    "gitlab": lambda: "glpat-" + _r(20, _AN + "_-"), "slack_bot": lambda: "xoxb-" + "-".join(_r(12, string.digits) for _ in range(2)) + "-" + _r(24),
    "slack_user": lambda: "xoxp-" + _r(40, string.digits + "-"), "slack_webhook": lambda: "https://hooks.slack.com/services/T" + _upper(8) + "/B" + _upper(8) + "/" + _r(24),
    "stripe_live": lambda: "sk_live_" + _r(99), "stripe_restricted": lambda: "rk_live_" + _r(99),
    "stripe_test": lambda: "sk_test_" + _r(24), "twilio_sid": lambda: "AC" + _hex(32), "twilio_key": lambda: "SK" + _hex(32),
    "sendgrid": lambda: "SG." + _r(22, _AN + "_-") + "." + _r(43, _AN + "_-"),
    "npm": lambda: "npm_" + _r(36), "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + _r(60, _AN + "_-"),
    "jwt": lambda: "eyJhbGciOiJIUzI1NiJ9." + base64.urlsafe_b64encode(_r(30).encode()).decode().rstrip("=") + "." + _r(43, _AN + "_-"),
    "random": lambda: _r(32), "random_lower": lambda: _r(24, string.ascii_lowercase + string.digits),
    "base64": lambda: base64.b64encode(secrets.token_bytes(30)).decode(),
    "urlenc": lambda: urllib.parse.quote(_r(12) + "@/" + _r(12) + "+=", safe=""),
    # a passphrase of plain lowercase words: the shape of a sub-command or a bare kernel flag
    "passphrase": lambda: "-".join(_r(7, string.ascii_lowercase) for _ in range(4)),
    "lower_word": lambda: _r(20, string.ascii_lowercase),
}
#: names under which values are planted: secret-looking and harmless-looking, odd and plural
ENV_NAMES = ("MY_SETTING", "APP_PW", "DB_PASS", "X_SECRET", "SVC_TOKEN", "SIGNING_KEY", "NCCL_EXTRA", "CUDA_SETTING",
             "VLLM_API_KEY", "TORCH_HUB_TOKEN", "DB_PASSWD", "X_SECRET_KEY_ID", "apiKey", "Hf_Token")
FLAGS = ("--api-key", "--api-keys", "--hf-token", "--db", "--served-model-name", "--my-setting", "--x", "--hf_token",
         "--HF-TOKEN", "--apiKey", "-k")
#: URL shapes that carry a password: query parameters, an empty user, schemes with a plus
URLS = ("jdbc:postgresql://db:5432/app?user=app&password={v}", "redis://:{v}@cache:6379/0",
        "amqp://guest:{v}@mq:5672/vhost", "mongodb+srv://svc:{v}@cluster0.example.net/db?retryWrites=true",
        "mysql://root:{v}@127.0.0.1/db", "https://deploy:{v}@git.example.com/org/repo.git")


def corpus(per_shape: int = 6) -> dict[str, str]:
    """``{label: value}``: ``per_shape`` fresh values of every shape (at least 200 in all)."""
    out = {f"{name}_{i}": make() for name, make in SHAPES.items() for i in range(per_shape)}
    return out


def encodings(value: str) -> list[str]:
    """The forms a leak may take: the value, base64 of it, URL-encoded."""
    forms = [value, base64.b64encode(value.encode()).decode().rstrip("="), urllib.parse.quote(value, safe="")]
    return [f for f in forms if len(f) >= 12]
