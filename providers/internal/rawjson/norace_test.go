//go:build !race

package rawjson_test

// raceEnabled: see race_test.go.
const raceEnabled = false
