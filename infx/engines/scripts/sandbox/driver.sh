# infx render driver, run inside the sandbox: one bench script per job directory /jobs/N
# (script: its path under /workspace; env: NUL-separated NAME=VALUE), results in /out/N.
# Kept to builtins where it can: every fork costs, and a whole catalog is ~1,200 jobs.
limit="$1"
shopt -s extglob dotglob nullglob
exec {nap}<> <(:)  # a pipe nobody writes to: `read -t` on it is a sleep without a fork
_others() {  # OTHERS=every process of the sandbox but its init and this driver
    local p
    OTHERS=()
    for p in /proc/[0-9]*; do
        p="${p#/proc/}"
        [[ "$p" == 1 || "$p" == "$$" ]] || OTHERS+=("$p")
    done
}
declare -A base=()  # the sandbox's own top-level entries: anything else at / was made by a script
for e in /*; do base["$e"]=1; done
for job in /jobs/*; do
    n="${job##*/}"
    out="/out/$n"
    mkdir -p "$out/rec"
    left=(/workspace/!(benchmarks) /tmp/* /root/* /dev/shm/*)
    for e in /*; do [[ -n "${base[$e]:-}" ]] || left+=("$e"); done
    (( ${#left[@]} )) && rm -rf "${left[@]}" 2>/dev/null
    mapfile -d '' envs < "$job/env"
    read -r script < "$job/script"
    (
        unset PATH OLDPWD
        for kv in "${envs[@]}"; do export "$kv"; done
        export "INFX_REC=$out/rec"
        cd /workspace && exec /usr/bin/timeout -k 1 "$limit" /bin/bash "$script"
    ) > /tmp/.infx-log 2>&1 < /dev/null
    rc=$?
    # a server started with '&' may still be recording: let it finish, then end what is left
    for ((w = 0; w < 600; w++)); do
        _others
        (( ${#OTHERS[@]} )) || break
        read -rt 0.005 -u "$nap" || :
    done
    (( ${#OTHERS[@]} )) && kill -9 "${OTHERS[@]}" 2>/dev/null
    echo "$rc" > "$out/rc"
    mapfile -t lines < /tmp/.infx-log
    from=$(( ${#lines[@]} > 80 ? ${#lines[@]} - 80 : 0 ))
    printf '%s\n' "${lines[@]:from}" > "$out/log"
done
times > /out/times  # CPU of this driver and every script it waited for (the render's cost, for the benchmark)
