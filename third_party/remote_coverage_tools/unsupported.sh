#!/bin/sh
echo "bazel coverage is not supported in this offline build (its tools would be downloaded)." >&2
exit 1
