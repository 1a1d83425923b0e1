#!/usr/bin/env bash
# redlock(1) as the build generated it: it renders without a groff or man
# warning, has the sections --help cannot give, and under SUBCOMMANDS a heading
# for every subcommand `redlock --help` lists, with every long flag that
# subcommand's --help lists.
# Usage: man_page_test.sh REDLOCK PAGE
set -euo pipefail
redlock=$1 page=$2
fail() {
  echo "man_page_test: $*" >&2
  exit 1
}
[[ -s $page ]] || fail "$page is missing or empty"

warnings=$(groff -man -ww -z "$page" 2>&1) || fail "groff failed on $page: $warnings"
[[ -z $warnings ]] || fail "groff warns about $page: $warnings"
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
rendered=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>"$errors") ||
  fail "man -l $page failed: $(cat "$errors")"
[[ ! -s $errors ]] || fail "man warns about $page: $(cat "$errors")"

for section in NAME SYNOPSIS DESCRIPTION OPTIONS SUBCOMMANDS 'EXIT STATUS' ENVIRONMENT FILES \
  EXAMPLES 'SEE ALSO'; do
  grep -qx "$section" <<<"$rendered" || fail "$page has no $section section"
done

# The quorum members (issue 38, item 10): the page says what a member is, and
# nothing that reads as if Redis Cluster were unsupported.
for kind in nodes clusters sentinel_masters; do
  grep -qF "\\fB$kind\\fR" "$page" || fail "$page does not describe the '$kind' members"
done
if grep -qi 'not Redis Cluster' "$page"; then
  fail "$page says 'not Redis Cluster', as if Redis Cluster members were unsupported"
fi

mapfile -t subcommands < <("$redlock" --help |
  sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
[[ ${#subcommands[@]} -gt 0 ]] || fail "found no subcommands in '$redlock --help'"
# The rendered SUBCOMMANDS section, up to the next section heading.
subcommands_section=$(sed -n '/^SUBCOMMANDS$/,/^[A-Z]/p' <<<"$rendered")
for sub in "${subcommands[@]}"; do
  grep -qx "   redlock $sub" <<<"$subcommands_section" ||
    fail "no heading 'redlock $sub' under SUBCOMMANDS in $page"
  # That subcommand's part of the roff source: from its .SS to the next heading.
  part=$(awk -v heading=".SS \"redlock $sub\"" '
    $0 == heading { inside = 1; next }
    inside && /^\.S[SH] / { exit }
    inside' "$page")
  mapfile -t flags < <("$redlock" "$sub" --help | sed -n '/^Options:/,/^$/p' |
    grep -oE '^  (-[[:alnum:]],)?--[[:alnum:]][[:alnum:]-]*' | grep -oE -- '--[[:alnum:]-]+$')
  [[ ${#flags[@]} -gt 0 ]] || fail "found no flags in '$redlock $sub --help'"
  for flag in "${flags[@]}"; do
    grep -qF -- "\\fB${flag//-/\\-}\\fR" <<<"$part" ||
      fail "$flag of 'redlock $sub' is not described under its heading in $page"
  done
done
echo "man_page_test: $page renders cleanly and covers ${subcommands[*]}"
