// Package routing is webhookd's sources, destinations and routes: what a
// WEBHOOKD_CONFIG file describes (docs/routing.md), or what the
// environment alone makes of the configured providers (FromEnv: one source
// per provider, named after it, and one sync destination, "default").
//
// A Config is immutable once loaded: the receiver reads the one in force
// when a delivery starts, and a reload (SIGHUP) swaps in a new Config
// without touching deliveries that run under the old one.
//
// Load decodes a file strictly (an unknown key, a duplicate name, a route
// to a missing destination, a provider or setting that does not exist, a
// missing required setting, an unset ${VAR}, a bad name: each one error
// naming the file, the line and the key), and a source's settings are read
// through providers.VariablesOf, exactly as its variables would be: one
// definition of names, defaults, parsing and checks. It never reads a
// provider variable or WEBHOOKD_DOWNSTREAM_URL that the file does not name
// through ${...}, and it must never put a setting's value in an error or
// a warning: settings are secrets.
package routing
