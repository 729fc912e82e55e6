package replay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Fixture is one provider request body to send, as stored in a file.
type Fixture struct {
	// Path is the file, as named on the command line or found in a folder
	// named there.
	Path string
	// Provider is the adapter that signs the body and the route it is sent
	// to: the file's folder name unless Load was given a provider.
	Provider string
	// Body is the file's content, byte for byte.
	Body []byte
}

// ErrNoFixtures is wrapped by Load's error when a folder holds no *.json
// file or no path was given.
var ErrNoFixtures = errors.New("replay: no fixtures")

// Load reads the fixtures that paths name: a file is one fixture (whatever
// its extension); a folder gives every *.json file directly in it, in name
// order (not its subfolders, nor hidden files such as a capture being
// written). A file named twice is loaded once.
//
// A fixture's provider is provider when that is not empty, else the name of
// the folder that holds the file (fixtures/stripe/x.json is a Stripe
// fixture). Load fails on the first path that cannot be read, before
// anything is sent, and on an empty file.
func Load(paths []string, provider string) ([]Fixture, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: give at least one fixture file or folder", ErrNoFixtures)
	}
	var (
		out  []Fixture
		seen = map[string]bool{}
	)
	add := func(path string) error {
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		if seen[abs] {
			return nil
		}
		seen[abs] = true
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if len(body) == 0 {
			return fmt.Errorf("%s: empty file", path)
		}
		p := provider
		if p == "" {
			p = filepath.Base(filepath.Dir(abs))
		}
		out = append(out, Fixture{Path: path, Provider: p, Body: body})
		return nil
	}
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			if err := add(path); err != nil {
				return nil, err
			}
			continue
		}
		files, err := jsonFiles(path)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%w: folder %s holds no *.json file", ErrNoFixtures, path)
		}
		for _, f := range files {
			if err := add(f); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// jsonFiles lists the visible *.json files directly in dir, sorted.
func jsonFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		full := filepath.Join(dir, name)
		// Stat follows a symbolic link; only regular files are fixtures.
		if info, err := os.Stat(full); err == nil && info.Mode().IsRegular() {
			out = append(out, full)
		}
	}
	return out, nil
}
