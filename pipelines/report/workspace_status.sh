#!/usr/bin/env bash
# Bazel's --workspace_status_command (.bazelrc): the code revision the combined report names. Only stamped
# report actions read it, so a new commit reruns the report, never a training action.
if revision=$(git rev-parse HEAD 2>/dev/null); then
  echo "STABLE_GIT_REVISION $revision"
  if [[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
    echo "STABLE_GIT_STATE clean"
  else
    echo "STABLE_GIT_STATE modified"
  fi
fi
