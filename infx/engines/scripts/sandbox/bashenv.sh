# infx render: read by every bash the sandbox starts (BASH_ENV): trace bench scripts with FILE:LINE
# so a failure names its line; the shims themselves stay quiet.
PS4='+ ${BASH_SOURCE[0]##*/}:${LINENO}: '
[[ "$0" == /infx/* ]] || set -x
