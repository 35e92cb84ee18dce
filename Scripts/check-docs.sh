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
# Each later block pasted after its document's first block alone must compile too: type-check
# those pairs against the modules just built (Swift 6 mode, as the package builds).
alone=$(mktemp -d)
trap 'rm -rf "$alone"' EXIT
.build/debug/DocCheck alone "$alone"
modules=.build/debug/Modules
crc=$(find .build/debug/ -path '*_RequestSetCRC32C.build/module.modulemap' | head -1)
export modules crc alone
if ! find "$alone" -name main.swift | sort | xargs -P 2 -I{} sh -c '
    swiftc -typecheck -swift-version 6 -I "$modules" -module-cache-path "$alone/.cache" \
      -Xcc -fmodule-map-file="$crc" -Xcc -fmodule-map-file=Sources/CSQLite/module.modulemap {} \
      > {}.log 2>&1 || { echo "$(dirname {} | xargs basename) does not compile alone after its first block:"; cat {}.log; exit 1; }'
then
  echo "A documented block does not compile pasted after its document's first block alone." >&2
  exit 1
fi
echo "every later block compiles pasted after its document's first block alone"
