#!/usr/bin/env bash
# The real-data pipeline on scikit-learn's bundled digits (README, "Data from files, and real data"):
# data -> ReLU network -> found gates -> spec -> derived theory (float64) -> verified.
# CLASSES=0,1,2 takes about a minute on 2 cores; CLASSES=0,1,2,3,4,5,6,7,8,9 about five.
set -euo pipefail
classes="${CLASSES:-0,1,2}"
out="${OUT:-digits-run}"
mkdir -p "$out"
gdln task digits --classes "$classes" --per-class 50 > "$out/digits.toml"
gdln find-gates "$out/digits.toml" --seeds 3 --clusters 2..12 --write-spec "$out/found.toml"
gdln race "$out/found.toml"
gdln verify "$out/found.toml"
gdln zero-shot --domains 4 --data digits   # the slides' naturalistic routing task (Figure 7)
