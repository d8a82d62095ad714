# infx render driver, run inside the sandbox: one bench script per job directory /jobs/N
# (script: its path under /workspace; env: NUL-separated NAME=VALUE), results in /out/N.
limit="$1"
shopt -s extglob dotglob nullglob
_others() {  # every process of the sandbox but its init, this driver and the caller's subshell
    local p
    for p in /proc/[0-9]*; do
        p="${p#/proc/}"
        [[ "$p" == 1 || "$p" == "$$" || "$p" == "$BASHPID" ]] || echo "$p"
    done
}
for job in /jobs/*; do
    n="${job##*/}"
    out="/out/$n"
    mkdir -p "$out/rec"
    left=(/workspace/!(benchmarks) /tmp/* /root/*)
    (( ${#left[@]} )) && rm -rf "${left[@]}" 2>/dev/null
    mapfile -d '' envs < "$job/env"
    script="$(< "$job/script")"
    ( cd /workspace && exec env -i "${envs[@]}" "INFX_REC=$out/rec" timeout -k 1 "$limit" bash "$script" ) \
        > /tmp/.infx-log 2>&1 < /dev/null
    rc=$?
    # a server started with '&' may still be recording: let it finish, then end what is left
    for ((w = 0; w < 60; w++)); do [[ -z "$(_others)" ]] && break; sleep 0.05; done
    left="$(_others)"
    [[ -n "$left" ]] && kill -9 $left 2>/dev/null
    echo "$rc" > "$out/rc"
    tail -n 80 /tmp/.infx-log > "$out/log"
done
