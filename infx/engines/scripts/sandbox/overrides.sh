# infx render: the side-effecting functions of benchmark_lib.sh replaced (sourced right after it).
# Pure helpers (check_env_vars, build_replay_cmd, setup_eval_context, ...) stay as they are.
_infx_record() {  # _infx_record KIND ARG...: one record, as the PATH shims write them (flat files)
    [[ -n "${INFX_REC:-}" ]] || return 0
    local d="$INFX_REC/${EPOCHREALTIME/./}-$BASHPID" kind="$1"
    shift
    if (( $# )); then printf '%s\0' "$@" > "$d.argv"; else : > "$d.argv"; fi
    printf '%s' "$kind" > "$d.name"
    printf '%s' "$kind" > "$d.kind"
}
_infx_wait_record() {  # _infx_wait_record PID: until the shim started as PID has written its record
    local pid="$1" i f
    [[ "$pid" =~ ^[0-9]+$ && -n "${INFX_REC:-}" ]] || return 0
    for ((i = 0; i < 300; i++)); do
        f=("$INFX_REC"/*-"$pid".kind)
        [[ -e "${f[0]}" ]] && return 0
        kill -0 "$pid" 2>/dev/null || return 0
        /usr/bin/sleep 0.01
    done
}
# "Ready" once the server's shim has recorded it, so a cleanup trap that kills the server right
# after cannot race the record.
wait_for_ready() {
    while [[ $# -gt 0 ]]; do [[ "$1" == --pid ]] && _infx_wait_record "${2:-}"; shift; done
    return 0
}
wait_for_server_ready() {
    while [[ $# -gt 0 ]]; do [[ "$1" == --server-pid ]] && _infx_wait_record "${2:-}"; shift; done
    return 0
}
start_gpu_monitor() { return 0; }
stop_gpu_monitor() { return 0; }
wait_for_amd_gpu_clean() { return 0; }
stop_background_process_tree() { return 0; }
move_profile_trace_for_relay() { return 0; }
run_benchmark_serving() { _infx_record client "$@"; }
run_eval() { _infx_record eval "$@"; }
run_lm_eval() { _infx_record eval "$@"; }
run_swebench_eval() { _infx_record eval "$@"; }
append_lm_eval_summary() { return 0; }
_install_lm_eval_deps() { return 0; }
_patch_lm_eval() { return 0; }
_install_swebench_agent_deps() { return 0; }
_install_swebench_deps() { return 0; }
_ensure_modal_credentials() { return 0; }
agentic_pip_install() { _infx_record install "$@"; }
ensure_agentic_uv() { return 0; }
ensure_hf_cli() { return 0; }
install_agentic_deps() { export AIPERF_CLI="${AIPERF_CLI:-aiperf}"; }
resolve_trace_source() { TRACE_SOURCE_FLAG="${TRACE_SOURCE_FLAG:---public-dataset weka}"; }
validate_required_agentic_server_metrics() { return 0; }
write_agentic_result_json() { return 0; }
run_agentic_replay_and_write_outputs() {
    local -a words
    read -r -a words <<< "${REPLAY_CMD:-}"
    _infx_record replay "${words[@]}"
}
