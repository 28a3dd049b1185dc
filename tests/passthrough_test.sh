#!/bin/bash
. "$(dirname "$0")/helpers.sh"
testNothing() { :; }
. "$SHUNIT2"
