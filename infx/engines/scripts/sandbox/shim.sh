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
