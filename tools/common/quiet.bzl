"""quiet(cmd): a genrule command whose tools' progress stays out of the build log while they succeed."""

def quiet(cmd, log = None):
    """`cmd` (genrule shell) with its stderr captured; if it fails, the last 5 lines (the tool's one-line
    `<program>: error:` last) are shown and the action fails. `log`: a declared output to keep stderr in
    (default: a temporary file). Built by concatenation, not %, so `cmd` may hold a select()."""
    if log:
        return "{ " + cmd + "; } 2> " + log + " || { tail -n 5 " + log + " >&2; exit 1; }"
    return "log=$$(mktemp); { " + cmd + "; } 2> $$log || { tail -n 5 $$log >&2; rm -f $$log; exit 1; }; rm -f $$log"
