#!/usr/bin/env bash
# The documentation test: every Swift block of README.md and of the DocC articles
# (Sources/RequestSet/RequestSet.docc), pasted exactly as shown, compiles, runs twice in one
# folder, leaves the temporary directory as it was, and prints what its `// →` comments say.
#
# Each document's blocks are written, in order and with nothing added, to
# Playgrounds/Docs/<Document>/main.swift (an executable target, DocDocument); the README's
# begin with its quick start, an article's with its own first block. Commit those files
# with the document. With CI=true a generated file that differs from its document fails the
# check instead of being rewritten.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product DocCheck
if [ "${CI:-}" = "true" ]; then
  .build/debug/DocCheck check
else
  .build/debug/DocCheck write
fi
# Builds the programs (and the rest of the package; after CI's build this is quick).
swift build 2>&1 | tee /tmp/requestset-docs-build.log
if grep "warning:" /tmp/requestset-docs-build.log | grep -q "Playgrounds/Docs/"; then
  echo "A documented example compiles with warnings; examples build warning-free." >&2
  exit 1
fi
.build/debug/DocCheck run
