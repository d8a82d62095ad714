#!/usr/bin/env bash
# infx render shim: stands in for a command a bench script runs (the server, its launcher, an
# installer, a GPU tool). It records what was asked for and does nothing else.
# Record: flat files $INFX_REC/<usec>-<pid>.{argv,env (NUL-separated),filemap,file.N,name,kind}, kind last.
name="${0##*/}"
kind=aux
if [[ "$name" == sed ]]; then
    # `sed -i` on the container image's own files (patching the engine's sources) is skipped and
    # recorded; every other sed is the real one.
    inplace=0 missing=0
    for a in "$@"; do
        [[ "$a" == -i* || "$a" == --in-place* ]] && inplace=1
        [[ "$a" == /* && "$a" != /workspace/* && "$a" != /tmp/* && "$a" != /root/* && ! -e "$a" ]] && missing=1
    done
    (( inplace && missing )) || exec /usr/bin/sed "$@"
fi
trap '' TERM INT HUP  # a script's cleanup trap may kill its "server" at once: finish the record first
case "$name" in
    vllm|sglang) [[ "${1:-}" == serve ]] && kind=server ;;
    sleep) exit 0 ;;  # nothing runs in a render, so nothing is waited for
    trtllm-serve) kind=server ;;
    python|python3|python3.*)
        for ((i = 1; i <= $#; i++)); do
            if [[ "${!i}" == -m ]]; then
                j=$((i + 1)); mod="${!j:-}"
                case "$mod" in
                    sglang.launch_server|vllm.entrypoints.*|atom.entrypoints.*|tensorrt_llm.*) kind=server ;;
                esac
                break
            fi
        done ;;
    mpirun|numactl|taskset|nohup|stdbuf)
        for a in "$@"; do
            case "$a" in
                trtllm-serve|*/trtllm-serve|sglang.launch_server|vllm.entrypoints.*|atom.entrypoints.*) kind=server ;;
                serve) [[ "$prev" == vllm || "$prev" == */vllm || "$prev" == sglang ]] && kind=server ;;
            esac
            prev="$a"
        done ;;
esac
if [[ -n "${INFX_REC:-}" ]]; then
    # flat files, builtins only (no mkdir/cp forks): PREFIX.{argv,env,filemap,file.N,name,kind}; kind last
    d="$INFX_REC/${EPOCHREALTIME/./}-$$"
    if (( $# )); then printf '%s\0' "$@" > "$d.argv"; else : > "$d.argv"; fi
    if [[ "$kind" == server ]]; then
        env -0 > "$d.env"
        n=0
        for a in "$@"; do
            v="${a#*=}"
            for f in "$a" "$v"; do
                if [[ -f "$f" && -r "$f" && "$f" != /usr/* && "$f" != /infx/* ]]; then
                    mapfile -d '' chunk < "$f"
                    printf '%s' "${chunk[@]}" > "$d.file.$n"
                    printf '%s\0' "$f" >> "$d.filemap"
                    n=$((n + 1))
                    break
                fi
            done
        done
    fi
    printf '%s' "$name" > "$d.name"
    printf '%s' "$kind" > "$d.kind"
fi
# `hf download` / `huggingface-cli download`: a placeholder snapshot where the real CLI would put one
# (--local-dir, else the hub cache's models--ORG--NAME/snapshots/REV with refs/main), holding
# config.json, tokenizer_config.json, a one-shard safetensors index, the (empty) shard and any file
# named on the command line; its path on stdout, as the real CLI prints it. Files already there stay.
if [[ ( "$name" == hf || "$name" == huggingface-cli ) && "${1:-}" == download ]]; then
    shift
    repo="" local_dir="" cache_dir="" wanted=()
    while (( $# )); do
        case "$1" in
            --local-dir|--cache-dir|--revision|--repo-type|--include|--exclude|--token|--max-workers)
                [[ "$1" == --local-dir ]] && local_dir="${2:-}"
                [[ "$1" == --cache-dir ]] && cache_dir="${2:-}"
                shift ;;
            --local-dir=*) local_dir="${1#*=}" ;;
            --cache-dir=*) cache_dir="${1#*=}" ;;
            -*) ;;
            *) if [[ -z "$repo" ]]; then repo="$1"; else wanted+=("$1"); fi ;;
        esac
        shift
    done
    [[ -n "$repo" ]] || exit 0
    if [[ -n "$local_dir" ]]; then
        snap="$local_dir"
    else
        hub="${cache_dir:-${HF_HUB_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}/hub}}"
        hub="${hub%/}/models--${repo//\//--}"
        snap="$hub/snapshots/infx-render-placeholder"
        /usr/bin/mkdir -p "$hub/refs" 2>/dev/null && printf 'infx-render-placeholder' > "$hub/refs/main"
    fi
    /usr/bin/mkdir -p "$snap" 2>/dev/null || exit 0
    shard=model-00001-of-00001.safetensors
    [[ -e "$snap/config.json" ]] || printf '{"infx_render_placeholder": true}\n' > "$snap/config.json"
    [[ -e "$snap/tokenizer_config.json" ]] || printf '{}\n' > "$snap/tokenizer_config.json"
    [[ -e "$snap/model.safetensors.index.json" ]] ||
        printf '{"metadata": {}, "weight_map": {"infx.placeholder": "%s"}}\n' "$shard" > "$snap/model.safetensors.index.json"
    [[ -e "$snap/$shard" ]] || : > "$snap/$shard"
    for f in "${wanted[@]}"; do
        [[ "$f" == */* ]] && /usr/bin/mkdir -p "$snap/${f%/*}" 2>/dev/null
        [[ -e "$snap/$f" ]] || : > "$snap/$f" 2>/dev/null
    done
    printf '%s\n' "$snap"
    exit 0
fi
# Inline Python (`python3 -c CODE`, `python3 - <<EOF`) is run by the host's interpreter, with a
# throwaway site dir first on its path that holds empty `vllm` and `aiter` packages (the container's
# dist-packages, for scripts that locate it). An inline program that fails (it imports what only the
# container has, or reads the image's files) is taken as the container's silent success: exit 0, no output.
if [[ "$kind" == aux && ( "$name" == python || "$name" == python3 || "$name" == python3.* ) \
      && ( "${1:-}" == -c || "${1:-}" == - ) ]]; then
    site=/tmp/.infx-site/dist-packages
    if [[ ! -e "$site/aiter/__init__.py" ]]; then
        /usr/bin/mkdir -p "$site/vllm" "$site/aiter" && : > "$site/vllm/__init__.py" && : > "$site/aiter/__init__.py"
    fi
    outf="/tmp/.infx-py.$$"
    PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$@" > "$outf" 2>/dev/null
    rc=$?
    if (( rc == 0 )); then
        mapfile -d '' chunk < "$outf"
        printf '%s' "${chunk[@]}"
    fi
    : > "$outf"
    exit 0
fi
# Services a script starts in the background and then probes (`kill -0 $PID`) stay up, idle, until
# the script that started them ends.
case "$name" in
    mooncake_master|lmcache_server|lmcache)
        [[ "$name" != lmcache || "${1:-}" == server ]] || exit 0
        exec {nap}<> <(:)
        while kill -0 "$PPID" 2>/dev/null; do read -rt 0.02 -u "$nap" || :; done
        exit 0 ;;
esac
# GPU tools that scripts parse get an idle GPU's answer, so a render takes the path a clean node takes.
if [[ "$name" == rocm-smi ]]; then
    for a in "$@"; do
        case "$a" in
            --showmemuse) printf 'GPU[0]\t\t: GPU Memory Allocated (VRAM%%): 0\n' ;;
            --showfw) printf 'GPU[0]\t\t: MEC firmware version: 177\n' ;;
        esac
    done
fi
exit 0
