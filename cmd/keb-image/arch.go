package main

import "runtime"

// goarch is the image's architecture: the one the binary was built for
// (make image builds for the host; set GOARCH for another).
func goarch() string { return runtime.GOARCH }
