// Winpay's published sandbox key, an example of the built-in snap and
// winpay specs, is 1023 bits: Go verifies with it only under this setting,
// which cmd/webhookd sets for its binary (docs/provider-specs.md, "Weak
// keys").
//
//go:debug rsa1024min=0
package spec
