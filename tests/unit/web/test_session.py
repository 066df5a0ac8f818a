"""Sessions and CSRF, sans I/O: signed, expiring, ended at logout, never holding a token."""

from pydantic import SecretStr

from atoll.web.core.config import WebSettings
from atoll.web.core.session import Sessions, role_of, safe_next, same_origin

SECRET = "s" * 40


def sessions() -> Sessions:
    return Sessions(SECRET, idle_s=60, max_s=3600)


def test_a_cookie_round_trips_and_a_forged_or_foreign_one_does_not() -> None:
    store = sessions()
    session = store.new("admin", 1000.0)
    cookie = store.encode(session)
    assert store.decode(cookie, 1001.0) == session
    payload, _, signature = cookie.rpartition(".")
    assert store.decode(payload + "." + signature[:-2] + "AA", 1001.0) is None
    assert Sessions("t" * 40, 60, 3600).decode(cookie, 1001.0) is None
    assert store.decode("garbage", 1001.0) is None


def test_idle_and_absolute_timeouts_and_logout() -> None:
    store = sessions()
    session = store.new("viewer", 1000.0)
    cookie = store.encode(session)
    assert store.decode(cookie, 1061.0) is None  # idle too long
    renewed = store.touched(session, 1050.0)
    assert renewed is not None and store.decode(store.encode(renewed), 1100.0) is not None
    old = store.new("admin", 1000.0)
    assert store.decode(store.encode(store.touched(old, 4500.0) or old), 4601.0) is None
    store.end(session, 1010.0)
    assert store.decode(cookie, 1011.0) is None


def test_a_session_in_use_outlives_a_short_idle_timeout() -> None:
    store = Sessions(SECRET, idle_s=5, max_s=3600)
    session = store.new("admin", 1000.0)
    for now in (1004.0, 1008.0, 1012.0):  # a request every 4 s
        session = store.touched(session, now) or session
        assert store.decode(store.encode(session), now + 4.5) is not None
    assert store.touched(session, session.used_at + 0.1) is None  # not on every request


def test_csrf_tokens_are_per_session() -> None:
    store = sessions()
    a, b = store.new("admin", 0.0), store.new("admin", 0.0)
    assert store.csrf_ok(a, store.csrf_token(a))
    assert not store.csrf_ok(a, store.csrf_token(b))
    assert not store.csrf_ok(a, None) and not store.csrf_ok(a, "")


def test_roles_come_from_the_tokens_and_the_cookie_holds_none() -> None:
    settings = WebSettings(
        admin_token=SecretStr("admin-token-0123456789"),
        viewer_token=SecretStr("viewer-token-0123456789"),
        web_secret=SecretStr(SECRET),
    )
    hashes = settings.role_hashes()
    assert role_of("admin-token-0123456789", hashes) == "admin"
    assert role_of(" viewer-token-0123456789 ", hashes) == "viewer"
    assert role_of("nope", hashes) is None
    cookie = sessions().encode(sessions().new("admin", 0.0))
    assert "admin-token" not in cookie


def test_settings_refuse_to_start_without_what_the_dashboard_needs() -> None:
    def problem(**kwargs: str) -> str | None:
        values = {"admin_token": "admin-token-0123456789", "web_secret": SECRET, **kwargs}
        given = {k: SecretStr(v) for k, v in values.items() if v}
        return WebSettings(_env_file=None, **given).startup_problem()  # type: ignore[call-arg]

    assert problem() is None
    assert "ATOLL_ADMIN_TOKEN" in (problem(admin_token="") or "")
    assert "ATOLL_WEB_SECRET" in (problem(web_secret="short") or "")
    assert "both" in (problem(viewer_token="admin-token-0123456789") or "")


def test_origins_and_where_to_go_after_login() -> None:
    assert same_origin("http://127.0.0.1:8900", "http://127.0.0.1:8900")
    assert not same_origin(None, "http://127.0.0.1:8900")
    assert not same_origin("http://127.0.0.1:8901", "http://127.0.0.1:8900")
    assert safe_next("/jobs?state=running") == "/jobs?state=running"
    for bad in ("//evil.example/x", "https://evil.example", "", None, "/\\evil"):
        assert safe_next(bad) == "/"
