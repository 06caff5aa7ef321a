package azure

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxConfigFileSize bounds the operator's configuration files (a custom
// cloud, its CA bundle): both are a few KiB, so anything larger is a wrong
// path, not a configuration.
const maxConfigFileSize = 1 << 20

// ReadConfigFile reads a file the operator's configuration names (a flag,
// a custom cloud's caFile). It must be a regular file, symbolic links
// followed (Kubernetes mounts ConfigMaps through them), of at most 1 MiB:
// a directory, a device or a FIFO would otherwise block or exhaust the
// process at start.
func ReadConfigFile(path string) ([]byte, error) {
	path = filepath.Clean(path)
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if info.Size() > maxConfigFileSize {
		return nil, fmt.Errorf("%s has %d bytes, more than the %d a configuration file may have", path, info.Size(), maxConfigFileSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigFileSize {
		return nil, fmt.Errorf("%s grew past %d bytes while being read", path, maxConfigFileSize)
	}
	return data, nil
}
