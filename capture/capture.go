// Package capture saves the raw bodies of verified webhook deliveries as
// fixture files, <dir>/<provider>/<event-key>.json, so that a provider
// sandbox's real traffic can be sent again with `webhookd replay`.
//
// It must never be handed an unverified body (the receiver calls it only
// after the signature has been checked and the event parsed), never write
// outside its directory whatever the event key holds, and never leave a
// half-written file where replay would read it: every file is written to a
// temporary name in the same folder and renamed into place.
package capture

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// MaxNameBytes bounds a capture file's name, extension included, well under
// the 255 bytes most file systems allow.
const MaxNameBytes = 120

// hashBytes is how many bytes of the key's SHA-256 go into a file name whose
// key had to be changed (hex, so twice as many characters).
const hashBytes = 4

// Writer writes captured bodies under one directory. It is safe for
// concurrent use: writes of one key race only to rename, and the last
// rename wins with a complete file.
type Writer struct {
	dir string
	log *slog.Logger
}

// New returns a Writer for dir, creating dir if it is missing. A nil log
// discards the failures that Hook reports.
func New(dir string, log *slog.Logger) (*Writer, error) {
	if dir == "" {
		return nil, errors.New("capture: empty directory")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("capture: create %s: %w", dir, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{dir: dir, log: log}, nil
}

// Dir returns the directory the Writer writes under.
func (w *Writer) Dir() string { return w.dir }

// Path returns the file that the body of provider's event eventKey is
// written to.
func (w *Writer) Path(provider, eventKey string) string {
	return filepath.Join(w.dir, safeName(provider), FileName(eventKey))
}

// Write saves body as the capture of provider's event eventKey, replacing
// an earlier capture of the same event. The file appears complete or not at
// all.
func (w *Writer) Write(provider, eventKey string, body []byte) error {
	path := w.Path(provider, eventKey)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	// The temporary name starts with a dot and does not end in .json, so a
	// replay of the folder never picks up a file being written.
	tmp, err := os.CreateTemp(dir, ".capture-*.tmp")
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(body); err != nil {
		return fmt.Errorf("capture: write %s: %w", tmp.Name(), err)
	}
	// Synced before the rename, so that a crash leaves the old file or the
	// new one, never an empty one under the final name.
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("capture: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("capture: close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("capture: %w", err)
	}
	ok = true
	return nil
}

// Hook returns Write as a receiver.Config.Capture hook: a failure is logged
// (with the provider, the key and the error, never the body) and otherwise
// ignored, because capturing is a development aid that must not fail a
// delivery.
func (w *Writer) Hook() func(provider, eventKey string, body []byte) {
	return func(provider, eventKey string, body []byte) {
		if err := w.Write(provider, eventKey, body); err != nil {
			w.log.Warn("could not capture delivery", "provider", provider, "key", provider+":"+eventKey, "error", err.Error())
		}
	}
}

// FileName returns the file name a capture of eventKey gets: the key with
// every byte other than ASCII letters, digits, '_', and a non-leading '-'
// or '.' replaced by '_', cut to fit MaxNameBytes, then ".json". When anything
// had to change, a short hash of the original key is appended before the
// extension, so that keys that differ only in the replaced bytes (a:b and
// a/b) do not overwrite each other's captures. A key that needs no change
// keeps its own name (evt_123 gives evt_123.json).
func FileName(eventKey string) string {
	return safeName(eventKey) + ".json"
}

// safeName is FileName without the extension.
func safeName(key string) string {
	const limit = MaxNameBytes - len(".json")
	const suffix = 1 + 2*hashBytes // "-" and the hex hash

	var b strings.Builder
	changed := key == ""
	for i := 0; i < len(key); i++ {
		c := key[i]
		// A leading dot would hide the file (or make it "." or ".."); a
		// leading dash would make it look like an option to every shell
		// command run on it.
		if safeByte(c) && !(i == 0 && (c == '.' || c == '-')) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		changed = true
	}
	name := b.String()
	if reserved(name) {
		// Windows refuses these whatever follows the first dot.
		name, changed = "_"+name, true
	}
	if len(name) > limit {
		changed = true
	}
	if !changed {
		return name
	}
	if name == "" {
		name = "_"
	}
	if len(name) > limit-suffix {
		name = name[:limit-suffix]
	}
	sum := sha256.Sum256([]byte(key))
	return name + "-" + hex.EncodeToString(sum[:hashBytes])
}

func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// reserved reports names Windows will not create, whatever the extension;
// captures may be copied into a repository that Windows users check out.
func reserved(name string) bool {
	base, _, _ := strings.Cut(strings.ToUpper(name), ".")
	switch base {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	if len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) && base[3] >= '0' && base[3] <= '9' {
		return true
	}
	return false
}
