package replay

import "github.com/webhookd/webhookd/providers/fixture"

// Fixture is one provider request body to send, as stored in a file
// (providers/fixture, which the conformance kit reads too).
type Fixture = fixture.Fixture

// HeadersSuffix ends the name of the file that holds a fixture's captured
// headers (fixture.HeadersSuffix).
const HeadersSuffix = fixture.HeadersSuffix

// ErrNoFixtures is wrapped by Load's error when a folder holds no *.json
// file or no path was given.
var ErrNoFixtures = fixture.ErrNoFixtures

// Load reads the fixtures that paths name, as fixture.Load does.
func Load(paths []string, provider string) ([]Fixture, error) {
	return fixture.Load(paths, provider)
}
