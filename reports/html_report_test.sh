#!/usr/bin/env bash
# Opens the combined report's HTML page (report.html, built at the test's scale) in Debian's headless Chromium,
# alone in an empty folder so that only what it embeds can load, and checks what a reader would see: every
# figure of report.md loaded (naturalWidth > 0), every bold verdict of report.md carries its colour class, and
# every in-page link (the summary's links to the sections) lands on an element of the page.
# Usage: html_report_test.sh REPORT_DIR
set -euo pipefail
dir=$1
fail() { echo "html_report_test: $*"; exit 1; }
[[ -s "$dir/report.html" && -s "$dir/report.md" ]] || fail "no report.html or report.md in $dir"
tmp=${TEST_TMPDIR:-$(mktemp -d)}
mkdir -p "$tmp/page" "$tmp/home"
page="$tmp/page/report.html"

# The page, then a probe that counts on window load and writes the counts on <body>, which --dump-dom prints.
{
  cat "$dir/report.html"
  cat <<'EOF'
<script>
window.addEventListener('load', function () {
  var c = {loaded: 0, failed: 0, holds: 0, 'does-not-hold': 0, unresolved: 0, 'not-testable': 0, bare: 0,
           links: 0, broken: 0};
  for (const img of document.images) { if (img.complete && img.naturalWidth > 0) c.loaded++; else c.failed++; }
  const kinds = {'HOLDS': 'holds', 'DOES NOT HOLD': 'does-not-hold', 'UNRESOLVED': 'unresolved',
                 'NOT TESTABLE': 'not-testable'};
  for (const s of document.querySelectorAll('strong')) {
    const kind = kinds[s.textContent.replace(/\s+/g, ' ').trim()];
    if (!kind) continue;
    const span = s.parentElement.classList;
    if (span.contains('verdict') && span.contains('verdict-' + kind)) c[kind]++;
    else c.bare++;
  }
  for (const a of document.querySelectorAll('a[href^="#"]')) {
    c.links++;
    if (!document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1)))) c.broken++;
  }
  document.body.setAttribute('data-probe', Object.keys(c).map(k => k + '=' + c[k]).join(' '));
});
</script>
EOF
} >"$page"

# As root Chromium needs --no-sandbox; HOME and the profile must be writable.
if ! HOME="$tmp/home" timeout 50 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --user-data-dir="$tmp/profile" --virtual-time-budget=10000 --dump-dom "file://$page" \
  >"$tmp/dom.html" 2>"$tmp/chromium.log"; then
  tail -n 20 "$tmp/chromium.log"
  fail "chromium failed"
fi
probe=$(grep -o 'data-probe="[^"]*"' "$tmp/dom.html" | head -1 | sed 's/^data-probe="//; s/"$//')
[[ -n "$probe" ]] || { tail -n 20 "$tmp/chromium.log"; fail "the page's load event never came (no probe in the DOM)"; }
echo "html_report_test: chromium saw $probe"
got() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$probe"; }
count() { grep -oF -- "$1" "$dir/report.md" | wc -l; }

# Every figure that report.md shows loaded from the page itself.
figures=$(grep -oE '!\[[^]]*\]\([^)]+\)' "$dir/report.md" | wc -l)
((figures > 0)) || fail "report.md shows no figure"
[[ "$(got failed)" == 0 ]] || fail "$(got failed) figure(s) did not load"
[[ "$(got loaded)" == "$figures" ]] || fail "$(got loaded) figures loaded, report.md shows $figures"

# Every bold verdict of report.md is a coloured span, none left bare.
[[ "$(got bare)" == 0 ]] || fail "$(got bare) verdict(s) without their class"
for verdict in HOLDS 'DOES NOT HOLD' UNRESOLVED 'NOT TESTABLE'; do
  kind=$(tr 'A-Z ' 'a-z-' <<<"$verdict")
  want=$(count "**$verdict**")
  [[ "$(got "$kind")" == "$want" ]] || fail "$(got "$kind") verdict-$kind spans, report.md has $want **$verdict**"
done
(($(count '**HOLDS**') + $(count '**DOES NOT HOLD**') > 0)) || fail "report.md has no verdict"

# The summary links every experiment's row to its section, and every in-page link resolves.
rows=$(grep -cE '^\| \[[A-Za-z0-9_]+\]\(#[A-Za-z0-9_]+\) \|' "$dir/report.md" || true)
((rows > 0)) || fail "no summary row links to a section"
(($(got links) >= rows)) || fail "$(got links) in-page links, the summary alone has $rows"
[[ "$(got broken)" == 0 ]] || fail "$(got broken) in-page link(s) lead nowhere"
echo "html_report_test: $figures figures loaded, verdicts coloured, $rows summary rows linked to their sections"
