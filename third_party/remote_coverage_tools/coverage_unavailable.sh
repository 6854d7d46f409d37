#!/bin/sh
echo "bazel coverage is unavailable offline: remote_coverage_tools is a local stand-in (third_party/remote_coverage_tools)" >&2
exit 1
