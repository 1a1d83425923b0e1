# bash completion for redlock(1).
# Installed as share/bash-completion/completions/redlock, which bash-completion
# loads on the first <TAB> after "redlock". Without bash-completion it still
# works when sourced (e.g. from ~/.bashrc), except that the command after
# `run ... --` (or `elect ... --`) completes only as a command name or a file.
#
# The flag lists mirror `redlock SUBCOMMAND --help`; tests/cli/completion_test.sh
# fails when they drift apart.

_redlock() {
    local cur prev words cword split
    if declare -F _init_completion >/dev/null; then
        # -s: "--config=FILE" is one word, split into prev and cur.
        _init_completion -s || return
    else
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
    fi

    local subcommands='run acquire release extend status check list break audit check-fence'
    subcommands+=' elect leader'
    local globals='--config --json --verbose --help'
    # Flags that take a value: the word after one is never a subcommand.
    local takes_value=' -c --config -r --resource --ttl-ms --wait-ms --permits -w --wait '
    takes_value+=' -E --conflict-exit-code --command --on-lost --term-before-ms --kill-after-ms --value '
    takes_value+=' --holder --lock-delay-ms --reason --breaker --limit '
    takes_value+=' --prefix --budget-ms --name --proposal '
    local lock_flags='--resource --ttl-ms --wait-ms --fence --fair --shared --permits --holder
        --lock-delay-ms'

    # The subcommand, and where `--` hands the rest of the line to CMD.
    local i sub='' separator=0
    for ((i = 1; i < cword; i++)); do
        if [[ ${words[i]} == -- ]]; then
            separator=1
            break
        fi
        if [[ $takes_value == *" ${words[i]} "* ]]; then
            ((i++))
        elif [[ -z $sub && " $subcommands " == *" ${words[i]} "* ]]; then
            sub=${words[i]}
        fi
    done

    if ((separator)); then
        # COMP_WORDS, not words: bash split it at COMP_WORDBREAKS (= and :),
        # and _command_offset counts in its words.
        local offset
        for ((offset = 1; offset < COMP_CWORD; offset++)); do
            [[ ${COMP_WORDS[offset]} == -- ]] && break
        done
        if declare -F _command_offset >/dev/null; then
            _command_offset $((offset + 1))
        elif ((COMP_CWORD == offset + 1)); then
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        else
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
        return
    fi

    # The value of the flag before the cursor. Inside `run`, -c is --command;
    # everywhere else it is --config.
    case $prev in
        --config | -c)
            if [[ $prev == --config || $sub != run ]]; then
                if declare -F _filedir >/dev/null; then
                    _filedir
                else
                    compopt -o filenames 2>/dev/null
                    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                fi
                return
            fi
            return  # a shell command: nothing to offer
            ;;
        --fence)
            # check-fence --fence N takes a token; elsewhere --fence is a flag.
            [[ $sub == check-fence ]] && return
            ;;
        --on-lost)
            mapfile -t COMPREPLY < <(compgen -W 'term kill ignore' -- "$cur")
            return
            ;;
        -r | --resource | --ttl-ms | --wait-ms | --permits | -w | --wait | -E | \
            --conflict-exit-code | --command | --term-before-ms | --kill-after-ms | --value | \
            --holder | --lock-delay-ms | --reason | --breaker | --limit | --prefix | --budget-ms | \
            --name | --proposal)
            return  # free-form values: nothing to guess
            ;;
    esac
    [[ ${split-} == true ]] && return  # --flag=<TAB> of a flag handled above

    local flags
    case $sub in
        run) flags="$lock_flags --wait --nonblock --conflict-exit-code --command --on-lost
                    --term-before-ms --kill-after-ms --pid-only" ;;
        acquire) flags=$lock_flags ;;
        release | extend) flags='--resource --value --shared --permits' ;;
        status) flags='--resource --permits' ;;
        check) flags='--strict' ;;
        break) flags='--resource --reason --breaker --permits' ;;
        audit) flags='--resource --limit' ;;
        check-fence) flags='--resource --fence' ;;
        list) flags='--prefix --limit --budget-ms' ;;
        elect) flags='--name --proposal --ttl-ms --wait-ms --holder --on-lost --term-before-ms
                    --kill-after-ms --pid-only' ;;
        leader) flags='--name --watch' ;;
        '') flags='--version' ;;
    esac
    [[ $sub == extend ]] && flags+=' --ttl-ms'

    if [[ -z $sub && $cur != -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$subcommands" -- "$cur")
    else
        # shellcheck disable=SC2086 # the lists are words
        mapfile -t COMPREPLY < <(compgen -W "$(printf '%s ' $flags $globals)" -- "$cur")
    fi
}
complete -F _redlock redlock
