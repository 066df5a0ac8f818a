"""The vendored JavaScript and CSS are exactly the pinned releases the manifest names, each
with its license; no page needs more than 150 KB of JavaScript."""

import hashlib
import json
import re

from support import REPO_ROOT

STATIC = REPO_ROOT / "web" / "static"
VENDOR = STATIC / "vendor"
TEMPLATES = REPO_ROOT / "web" / "templates"
JS_BUDGET = 150 * 1024


def manifest() -> list[dict[str, str]]:
    return json.loads((VENDOR / "manifest.json").read_text())["files"]


def test_every_vendored_file_matches_its_pinned_hash_and_has_its_license() -> None:
    listed = set()
    for entry in manifest():
        path = VENDOR / entry["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], entry["file"]
        assert re.fullmatch(r"\d+\.\d+\.\d+", entry["version"])
        assert entry["license"] in ("0BSD", "MIT")
        assert (VENDOR / entry["license_file"]).stat().st_size > 100
        listed |= {entry["file"], entry["license_file"]}
    on_disk = {p.name for p in VENDOR.iterdir()} - {"manifest.json"}
    assert on_disk == listed, "a vendored file the manifest does not name, or the reverse"
    htmx = next(e for e in manifest() if e["name"] == "htmx.org")
    sse = next(e for e in manifest() if e["name"] == "htmx-ext-sse")
    assert htmx["version"].startswith("2.") and sse["version"].startswith("2.")


def test_the_pages_load_only_local_files_and_stay_under_the_javascript_budget() -> None:
    base = (TEMPLATES / "base.html").read_text()
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text()
        assert "http://" not in text and "https://" not in text, template.name
        assert "<script>" not in text, f"{template.name}: inline script (CSP forbids it)"
    scripts = re.findall(r'<script src="/static/([^"]+)"', base)
    job_page = re.findall(r'<script src="/static/([^"]+)"', (TEMPLATES / "job.html").read_text())
    heaviest = sum((STATIC / s).stat().st_size for s in [*scripts, *job_page])
    assert heaviest < JS_BUDGET, f"{heaviest} bytes of JavaScript on the job page"
