// Pins the Tilt release that `make tools-tilt` builds (tools/tilt/build.sh). Nothing here is
// compiled: Tilt's own go.mod has replace directives, which only take effect when Tilt is the
// main module, so build.sh builds it from a copy of this module's source instead.
module github.com/plinth-dev/plinth/tools/tilt

go 1.26.7

require github.com/tilt-dev/tilt v0.33.21
