//go:build !unix

package collectors

// ReadResources is only measured where getrusage exists; the collector runs
// on Linux, the plugin (which shares this package) anywhere.
func ReadResources() Resources { return Resources{} }
