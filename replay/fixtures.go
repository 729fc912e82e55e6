package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
	// Header holds the headers the body was captured with, from
	// <name>.headers.json beside it, or nil. They are sent as they are for
	// a provider that only the provider itself can sign (PayPal).
	Header http.Header
}

// HeadersSuffix ends the name of the file that holds a fixture's captured
// headers: fixtures/paypal/x.headers.json beside x.json, a JSON object of
// header names to a string or a list of strings. Such a file is never a
// fixture itself.
const HeadersSuffix = ".headers.json"

// ErrNoFixtures is wrapped by Load's error when a folder holds no *.json
// file or no path was given.
var ErrNoFixtures = errors.New("replay: no fixtures")

// Load reads the fixtures that paths name: a file is one fixture (whatever
// its extension, but a *.headers.json file is skipped); a folder gives every
// *.json file directly in it, in name order (not its subfolders, nor hidden
// files such as a capture being written, nor *.headers.json files). A file
// named twice is loaded once. A fixture x.json with x.headers.json beside it
// gets those headers.
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
		if seen[abs] || strings.HasSuffix(abs, HeadersSuffix) {
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
		header, err := capturedHeader(path)
		if err != nil {
			return err
		}
		out = append(out, Fixture{Path: path, Provider: p, Body: body, Header: header})
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
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") || strings.HasSuffix(name, HeadersSuffix) {
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

// capturedHeader reads the headers file beside the fixture at path, if any.
func capturedHeader(path string) (http.Header, error) {
	hpath := strings.TrimSuffix(path, filepath.Ext(path)) + HeadersSuffix
	raw, err := os.ReadFile(hpath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of headers: %w", hpath, err)
	}
	h := http.Header{}
	for name, v := range m {
		var one string
		var many []string
		switch {
		case json.Unmarshal(v, &one) == nil:
			h.Add(name, one)
		case json.Unmarshal(v, &many) == nil:
			for _, s := range many {
				h.Add(name, s)
			}
		default:
			return nil, fmt.Errorf("%s: header %q is not a string or a list of strings", hpath, name)
		}
	}
	return h, nil
}
