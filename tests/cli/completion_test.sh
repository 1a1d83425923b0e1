#!/usr/bin/env bash
# The bash completion (cli/completion/redlock.bash) against the built tool: it
# offers every subcommand `redlock --help` lists and every long flag of each
# `redlock SUB --help`, files after --config, the --on-lost actions, nothing for
# free-form values, and after `run ... --` it completes CMD. Every case runs
# twice: with bash-completion loaded, as on an installed system, and without it.
# Usage: completion_test.sh REDLOCK COMPLETION_SCRIPT
set -euo pipefail
redlock=$(realpath "$1") script=$(realpath "$2")
bash_completion=/usr/share/bash-completion/bash_completion
fail() {
  echo "completion_test: $*" >&2
  exit 1
}
[[ -r $bash_completion ]] ||
  fail "$bash_completion is missing (scripts/install-deps.sh installs bash-completion)"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
mkdir configs.d
touch cluster.json other.txt

# What <TAB> offers at the end of LINE, one candidate per line, in a fresh
# bash: MODE "full" loads bash-completion first, "bare" does not. COMP_WORDS
# is split as bash splits it, at blanks and at COMP_WORDBREAKS' = and :.
offers() {
  local mode=$1 line=$2
  bash --norc --noprofile -c '
    mode=$1 script=$2 bash_completion=$3 line=$4
    compopt() { :; }  # the builtin works only inside a real completion
    if [[ $mode == full ]]; then source "$bash_completion"; fi
    source "$script"
    spec=$(complete -p redlock) || exit 1
    function=${spec#*-F }
    function=${function%% *}
    read -ra blank_split <<<"$line"
    [[ $line == *" " ]] && blank_split+=("")
    COMP_WORDS=()
    for i in "${!blank_split[@]}"; do
      word=${blank_split[i]}
      while [[ $word =~ ^([^=:]*)([=:])(.*)$ ]]; do
        [[ -n ${BASH_REMATCH[1]} ]] && COMP_WORDS+=("${BASH_REMATCH[1]}")
        COMP_WORDS+=("${BASH_REMATCH[2]}")
        word=${BASH_REMATCH[3]}
      done
      # An empty word only where the line ends in a blank: "--config=" ends at "=".
      [[ -n $word || -z ${blank_split[i]} ]] && COMP_WORDS+=("$word")
    done
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$line
    COMP_POINT=${#line}
    COMPREPLY=()
    "$function" redlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"
  ' offers "$mode" "$script" "$bash_completion" "$line" 2>"$scratch/stderr" ||
    fail "$mode: completing '$line' failed: $(cat "$scratch/stderr")"
  [[ ! -s $scratch/stderr ]] || fail "$mode: completing '$line' printed: $(cat "$scratch/stderr")"
}

# expect MODE LINE WANT...: each WANT is among what LINE<TAB> offers.
expect() {
  local mode=$1 line=$2 got want
  shift 2
  got=$(offers "$mode" "$line" | sort -u)
  for want in "$@"; do
    grep -qxF -- "$want" <<<"$got" ||
      fail "$mode: '$line<TAB>' does not offer '$want'; it offers: ${got//$'\n'/ }"
  done
}

# expect_only MODE LINE [WANT...]: LINE<TAB> offers exactly the WANTs.
expect_only() {
  local mode=$1 line=$2 got want
  shift 2
  got=$(offers "$mode" "$line" | sort -u | grep -v '^$' || true)
  want=$(printf '%s\n' "$@" | sort -u | grep -v '^$' || true)
  [[ $got == "$want" ]] ||
    fail "$mode: '$line<TAB>' offers '${got//$'\n'/ }', not '${want//$'\n'/ }'"
}

mapfile -t subcommands < <("$redlock" --help |
  sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
[[ ${#subcommands[@]} -gt 0 ]] || fail "found no subcommands in '$redlock --help'"
long_flags() {  # the long flags of `redlock [SUB] --help`
  "$redlock" "$@" --help | sed -n '/^Options:/,/^$/p' |
    grep -oE '^  (-[[:alnum:]],)?--[[:alnum:]][[:alnum:]-]*' | grep -oE -- '--[[:alnum:]-]+$'
}
mapfile -t global_flags < <(long_flags)
[[ ${#global_flags[@]} -gt 0 ]] || fail "found no flags in '$redlock --help'"

for mode in full bare; do
  expect_only "$mode" 'redlock ' "${subcommands[@]}"
  expect_only "$mode" 'redlock ac' acquire
  expect "$mode" 'redlock run --t' --ttl-ms
  expect "$mode" 'redlock --' "${global_flags[@]}"
  for sub in "${subcommands[@]}"; do
    mapfile -t flags < <(long_flags "$sub")
    # The global flags, but for --version, follow a subcommand too.
    expect "$mode" "redlock $sub --" "${flags[@]}" --config --json --verbose
  done
  # A flag's value is not taken for the subcommand ("check" is a file here).
  expect_only "$mode" 'redlock --config check status --p' --permits
  expect_only "$mode" 'redlock --config cl' cluster.json
  expect "$mode" 'redlock -c ' cluster.json other.txt configs.d
  expect_only "$mode" 'redlock status --json --config o' other.txt
  expect_only "$mode" 'redlock run --on-lost ' term kill ignore
  # Inside run, -c is a shell command, and other values are free-form.
  expect_only "$mode" 'redlock run -c '
  expect_only "$mode" 'redlock acquire --resource '
  expect_only "$mode" 'redlock release -r x --value '
  # After --, CMD and its arguments; "=" and ":" split COMP_WORDS, not always words.
  expect "$mode" 'redlock --config=cluster.json run -r deploy:web -- ech' echo
  expect "$mode" 'redlock run -r deploy:web -- cat cl' cluster.json
done
# bash-completion splits --flag=value itself.
expect_only full 'redlock --config=cl' cluster.json
echo "completion_test: subcommands, flags, files and commands complete, with and without bash-completion"
